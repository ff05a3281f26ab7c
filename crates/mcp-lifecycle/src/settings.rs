//! What the manager is given: grace periods, health cadence, restart policy, the environment
//! for `${VAR}` and its policy, the sandbox, OAuth and listing settings.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::restart::RestartPolicy;

/// How the manager runs servers. `Debug` shows the environment's names, never its values
/// (they hold BotCraft's secrets).
#[derive(Clone)]
pub struct ManagerSettings {
    /// BotCraft's environment, read once at the edge: the source of `${VAR}` values and of
    /// [`PASSED_THROUGH_ENV`].
    pub env: BTreeMap<String, String>,
    /// Which `${VAR}` references of a config resolve (BotCraft's secrets never do).
    pub env_policy: crate::environment::EnvPolicy,
    /// After closing stdin, how long to wait before SIGTERM; after SIGTERM, before SIGKILL.
    pub stop_grace: Duration,
    /// How long a ping (and the confirming `tools/list`) may take in a health check.
    pub ping_timeout: Duration,
    /// How often the health loop runs (health checks, idle stops).
    pub health_interval: Duration,
    pub restart: RestartPolicy,
    /// Where the pids of running servers are recorded, so the next start reaps leftovers.
    pub pid_registry: Option<PathBuf>,
    /// Lines of stderr kept per server.
    pub stderr_lines: usize,
    /// Run every server process as this user (`BOTCRAFT_TOOL_USER`); `None`: as BotCraft.
    pub run_as: Option<crate::run_as::RunAs>,
    /// End and reap what servers leave behind (`reaper`): only in a process that is a child
    /// subreaper and starts no children but its servers (`botcraft serve`), never in a test
    /// process that runs other children.
    pub reap_orphans: bool,
    /// Put each server in a cgroup v2 of its own where the machine allows it
    /// (`crate::cgroup`); without one, trees are tracked by the subreaper and `/proc`.
    pub cgroups: bool,
    /// Sandbox every stdio server by its policy (`crate::confinement`); `None`: none is.
    pub sandbox: Option<crate::confinement::SandboxSettings>,
    /// OAuth for remote servers that ask for it; `None` leaves such servers `needs-auth`
    /// with no way to authorize them here.
    pub oauth: Option<crate::oauth::OAuthSettings>,
    /// How servers never listed for their config are listed in the background.
    pub listing: crate::listing::ListingSettings,
}

impl std::fmt::Debug for ManagerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerSettings")
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("env_policy", &self.env_policy)
            .field("stop_grace", &self.stop_grace)
            .field("ping_timeout", &self.ping_timeout)
            .field("health_interval", &self.health_interval)
            .field("restart", &self.restart)
            .field("pid_registry", &self.pid_registry)
            .field("stderr_lines", &self.stderr_lines)
            .field("run_as", &self.run_as)
            .field("reap_orphans", &self.reap_orphans)
            .field("cgroups", &self.cgroups)
            .field("sandbox", &self.sandbox)
            .field("oauth", &self.oauth)
            .field("listing", &self.listing)
            .finish()
    }
}

impl Default for ManagerSettings {
    fn default() -> Self {
        Self {
            env: BTreeMap::new(),
            env_policy: crate::environment::EnvPolicy::default(),
            stop_grace: Duration::from_secs(3),
            ping_timeout: Duration::from_secs(5),
            health_interval: Duration::from_secs(15),
            restart: RestartPolicy::default(),
            pid_registry: None,
            stderr_lines: 200,
            run_as: None,
            reap_orphans: false,
            cgroups: false,
            sandbox: None,
            oauth: None,
            listing: crate::listing::ListingSettings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_the_environment_without_its_values() {
        let settings = ManagerSettings {
            env: [("OPENAI_API_KEY".to_owned(), "sk-secret-value".to_owned())].into(),
            ..ManagerSettings::default()
        };
        let shown = format!("{settings:?}");
        assert!(shown.contains("OPENAI_API_KEY"), "{shown}");
        assert!(!shown.contains("sk-secret-value"), "{shown}");
    }
}
