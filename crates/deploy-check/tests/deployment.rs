//! The repository's Dockerfile, .dockerignore, Kubernetes manifests and deployment doc,
//! checked against the workspace they deploy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use deploy_check::dockerfile::healthcheck_command;
use deploy_check::manifests::{self, Manifest};
use deploy_check::{Args, Dockerfile, Stage, Workspace};
use pretty_assertions::assert_eq;

/// The binaries the image ships.
const SHIPPED: [&str; 5] = [
    "botcraft",
    "forge-bash",
    "forge-filesystem",
    "forge-discovery",
    "forge-typesense",
];
const HEALTH_PATH: &str = "/api/health";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn dockerfile() -> Dockerfile {
    Dockerfile::parse(&read("Dockerfile")).expect("the Dockerfile parses")
}

fn workspace() -> Workspace {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    Workspace::load(Path::new(&cargo), &root()).expect("cargo metadata")
}

fn runtime(file: &Dockerfile) -> &Stage {
    file.final_stage().expect("at least one stage")
}

/// The port of `BOTCRAFT_ADDR` in the runtime stage.
fn addr_port(file: &Dockerfile) -> String {
    let env = runtime(file).env();
    let addr = env.get("BOTCRAFT_ADDR").expect("ENV BOTCRAFT_ADDR");
    let (_, port) = addr.rsplit_once(':').expect("BOTCRAFT_ADDR is host:port");
    port.to_owned()
}

/// `.dockerignore` patterns (plain prefixes; no negations are used).
fn ignored(path: &str) -> bool {
    read(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .any(|pattern| {
            let pattern = pattern.trim_end_matches('/');
            path == pattern || path.starts_with(&format!("{pattern}/"))
        })
}

#[test]
fn every_copy_from_the_context_names_a_path_that_exists_and_is_not_ignored() {
    let file = dockerfile();
    let mut copied = Vec::new();
    for stage in &file.stages {
        for copy in stage.all("COPY").chain(stage.all("ADD")) {
            if copy.flag("from").is_some() {
                continue;
            }
            let words = copy.args.words();
            let (destination, sources) = words.split_last().expect("COPY has a destination");
            assert!(!destination.is_empty());
            for source in sources {
                let path = source.trim_start_matches("./");
                assert!(
                    root().join(path).exists(),
                    "line {}: COPY {source}: no such path in the repository",
                    copy.line
                );
                assert!(
                    !ignored(path),
                    "line {}: {source} is in .dockerignore",
                    copy.line
                );
                copied.push(path.to_owned());
            }
        }
    }
    for needed in ["Cargo.toml", "Cargo.lock", "apps", "crates"] {
        assert!(copied.iter().any(|p| p == needed), "{needed} is not copied");
    }
}

#[test]
fn copies_between_stages_name_an_earlier_stage() {
    let file = dockerfile();
    for (index, stage) in file.stages.iter().enumerate() {
        for copy in stage.all("COPY") {
            if let Some(from) = copy.flag("from") {
                let earlier = file.stages[..index]
                    .iter()
                    .any(|s| s.name.as_deref() == Some(from));
                assert!(
                    earlier,
                    "line {}: --from={from} is no earlier stage",
                    copy.line
                );
            }
        }
    }
}

#[test]
fn the_build_compiles_every_shipped_binary_optimised_without_debug_info_and_locked() {
    let file = dockerfile();
    let workspace = workspace();
    let build = file.stage("build").expect("a stage named build");
    let cargo_build = build
        .all("RUN")
        .find(|run| run.args.text().contains("cargo build"))
        .expect("a RUN with cargo build");
    let words = cargo_build.args.words();
    assert!(
        words.iter().any(|w| w == "--locked"),
        "cargo build without --locked"
    );
    assert!(
        words
            .windows(2)
            .any(|pair| pair[0] == "--profile" && pair[1] == "serve"),
        "cargo build without --profile serve"
    );
    // The profile itself: release code without debug info, defined once in Cargo.toml.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let profile = manifest
        .split("[profile.serve]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("a [profile.serve] in Cargo.toml");
    for setting in ["inherits = \"release\"", "debug = false"] {
        assert!(
            profile.contains(setting),
            "[profile.serve] without {setting}"
        );
    }
    assert!(
        cargo_build.args.text().contains("target/serve/"),
        "the binaries are not taken from target/serve"
    );
    let built: BTreeSet<&str> = words
        .windows(2)
        .filter(|pair| pair[0] == "--bin")
        .map(|pair| pair[1].as_str())
        .collect();
    for bin in &built {
        assert!(
            workspace.binaries.contains_key(*bin),
            "--bin {bin} is not a binary of the workspace: {:?}",
            workspace.binaries.keys()
        );
    }
    assert_eq!(built, BTreeSet::from(SHIPPED));
    // botcraft laid out by use (apps/bot-craft/build.rs), with the package set of
    // scripts/run.sh: its list's symbol names hash the features cargo unified over them.
    assert!(
        words.iter().any(|w| w == "BOTCRAFT_LINK_ORDER=on"),
        "cargo build without BOTCRAFT_LINK_ORDER=on"
    );
    let packages = |words: &[String]| -> BTreeSet<String> {
        words
            .windows(2)
            .filter(|pair| pair[0] == "-p")
            .map(|pair| pair[1].clone())
            .collect()
    };
    let run_sh = std::fs::read_to_string(root().join("scripts/run.sh")).expect("scripts/run.sh");
    let run_build = run_sh
        .lines()
        .find(|line| line.contains("cargo build --profile"))
        .expect("scripts/run.sh runs cargo build --profile");
    let run_words: Vec<String> = run_build.split_whitespace().map(str::to_owned).collect();
    assert!(
        run_words
            .iter()
            .any(|w| w.starts_with("BOTCRAFT_LINK_ORDER=")),
        "scripts/run.sh builds without asking for BOTCRAFT_LINK_ORDER"
    );
    // The RUN's cargo build alone (it goes on with `&& mkdir -p /out`).
    let cargo_words: Vec<String> = words.iter().take_while(|w| *w != "&&").cloned().collect();
    assert_eq!(packages(&cargo_words), packages(&run_words));
    assert!(packages(&cargo_words).contains("bot-craft"));
}

#[test]
fn the_builder_uses_the_workspace_rust_version() {
    let file = dockerfile();
    let workspace = workspace();
    let declared: BTreeSet<&String> = workspace.rust_versions.values().collect();
    assert_eq!(declared.len(), 1, "one rust-version: {declared:?}");
    let build = file.stage("build").expect("a stage named build");
    let version = declared.into_iter().next().expect("one");
    assert!(
        build.base.starts_with(&format!("rust:{version}-")),
        "build stage base {} is not rust:{version}-…",
        build.base
    );
}

#[test]
fn the_runtime_image_ships_the_binaries_on_path_and_runs_botcraft_serve() {
    let file = dockerfile();
    let workspace = workspace();
    let stage = runtime(&file);
    assert!(stage.base.starts_with("debian:"), "{}", stage.base);
    assert!(stage.base.ends_with("-slim"), "{}", stage.base);

    let mut shipped = BTreeSet::new();
    for copy in stage
        .all("COPY")
        .filter(|c| c.flag("from") == Some("build"))
    {
        let words = copy.args.words();
        let (destination, sources) = words.split_last().expect("a destination");
        assert_eq!(destination, "/usr/local/bin/", "binaries go on PATH");
        for source in sources {
            let name = source.rsplit('/').next().unwrap_or(source);
            shipped.insert(name.to_owned());
        }
    }
    assert_eq!(
        shipped,
        SHIPPED
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<BTreeSet<_>>()
    );

    let cmd = stage.last("CMD").expect("a CMD");
    let Args::Exec(cmd) = &cmd.args else {
        panic!("CMD must be in exec form");
    };
    assert_eq!(cmd, &vec!["botcraft".to_owned(), "serve".to_owned()]);
    assert_eq!(
        workspace.binaries.get("botcraft").map(String::as_str),
        Some("bot-craft")
    );
}

#[test]
fn the_runtime_runs_unprivileged() {
    let file = dockerfile();
    let user = runtime(&file).last("USER").expect("a USER").args.text();
    assert!(
        !["root", "0", "root:root", "0:0"].contains(&user.as_str()),
        "USER {user}"
    );
    let adds_user = runtime(&file)
        .all("RUN")
        .any(|run| run.args.text().contains("useradd") && run.args.text().contains(&user));
    assert!(adds_user, "no RUN creates user {user}");
}

#[test]
fn exposed_port_env_default_and_healthcheck_agree() {
    let file = dockerfile();
    let port = addr_port(&file);
    let stage = runtime(&file);
    let exposed = stage.last("EXPOSE").expect("an EXPOSE").args.words();
    assert_eq!(exposed, vec![port.clone()]);

    let health = stage.last("HEALTHCHECK").expect("a HEALTHCHECK");
    let command = healthcheck_command(health).expect("HEALTHCHECK CMD …");
    // A shell, so the check follows BOTCRAFT_ADDR's port (its default is EXPOSE's, above).
    let words = command.words();
    assert_eq!(words[..2], ["sh".to_owned(), "-c".to_owned()], "{words:?}");
    let script: Vec<&str> = words[2].split_whitespace().collect();
    assert_eq!(script[..2], ["exec", "curl"], "{script:?}");
    let url = format!("http://127.0.0.1:${{BOTCRAFT_ADDR##*:}}{HEALTH_PATH}");
    assert!(
        script.contains(&url.as_str()),
        "health check {script:?} does not fetch {url}"
    );
    assert!(
        script.iter().any(|w| w.starts_with("-f")),
        "curl -f fails on HTTP errors"
    );
    let installs_curl = stage
        .all("RUN")
        .any(|run| run.args.words().iter().any(|w| w == "curl"));
    assert!(installs_curl, "curl is not installed in the runtime stage");
}

#[test]
fn playwright_mcp_is_pinned_as_in_e2e() {
    let file = dockerfile();
    let package: serde_json::Value =
        serde_json::from_str(&read("e2e/package.json")).expect("e2e/package.json");
    let pinned = package["devDependencies"]["@playwright/mcp"]
        .as_str()
        .expect("e2e pins @playwright/mcp");
    assert_eq!(
        file.global_args
            .get("PLAYWRIGHT_MCP_VERSION")
            .cloned()
            .flatten()
            .as_deref(),
        Some(pinned)
    );
    let installs = runtime(&file).all("RUN").any(|run| {
        let text = run.args.text();
        text.contains("npm install -g")
            && text.contains("@playwright/mcp@${PLAYWRIGHT_MCP_VERSION}")
    });
    assert!(
        installs,
        "the runtime does not npm install the pinned Playwright MCP"
    );
    let chromium = runtime(&file)
        .all("RUN")
        .any(|run| run.args.words().iter().any(|w| w == "chromium"));
    assert!(chromium, "Debian's chromium is not installed");
    let env = runtime(&file).env();
    assert_eq!(
        env.get("BOTCRAFT_PLAYWRIGHT_COMMAND").map(String::as_str),
        Some("playwright-mcp"),
        "the image seeds its installed Playwright MCP, not npx"
    );
    // scripts/run.sh installs the same release, and the seed's npx default names it.
    let run_sh: serde_json::Value =
        serde_json::from_str(&read("scripts/playwright-mcp/package.json")).expect("package.json");
    assert_eq!(
        run_sh["dependencies"]["@playwright/mcp"].as_str(),
        Some(pinned)
    );
    let seed = read("crates/store/src/seed.rs");
    assert!(
        seed.contains(&format!("\"@playwright/mcp@{pinned}\"")),
        "store's seed pins @playwright/mcp@{pinned}"
    );
}

fn k8s() -> Vec<Manifest> {
    manifests::load_dir(&root().join("deploy/k8s")).expect("deploy/k8s parses")
}

#[test]
fn kubernetes_probes_and_ports_match_the_image() {
    let file = dockerfile();
    let port: u64 = addr_port(&file).parse().expect("a numeric port");
    let manifests = k8s();
    let deployment = manifests
        .iter()
        .find(|m| m.kind() == "Deployment")
        .expect("a Deployment");
    let app = deployment
        .containers()
        .into_iter()
        .find(|c| c["args"] == serde_json::json!(["botcraft", "serve"]))
        .expect("a container running botcraft serve");
    let http = app["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == "http"))
        .expect("a port named http");
    assert_eq!(http["containerPort"].as_u64(), Some(port));
    // Liveness (and startup) on /api/health/live, readiness on /api/health/ready: both
    // routes of the API (`http_api::routes`).
    for (probe, path) in [
        ("startupProbe", "/api/health/live"),
        ("livenessProbe", "/api/health/live"),
        ("readinessProbe", "/api/health/ready"),
    ] {
        let get = &app[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(get["port"], "http", "{probe}");
    }
    let config = manifests
        .iter()
        .find(|m| m.kind() == "ConfigMap")
        .expect("a ConfigMap");
    let addr = config.document["data"]["BOTCRAFT_ADDR"]
        .as_str()
        .expect("BOTCRAFT_ADDR in the ConfigMap");
    assert!(addr.ends_with(&format!(":{port}")), "{addr}");
    let service = manifests
        .iter()
        .find(|m| m.kind() == "Service")
        .expect("a Service");
    assert_eq!(service.document["spec"]["ports"][0]["targetPort"], "http");
}

#[test]
fn kubernetes_keys_come_from_a_secret_not_the_config_map() {
    let manifests = k8s();
    let config = manifests
        .iter()
        .find(|m| m.kind() == "ConfigMap")
        .expect("a ConfigMap");
    let data = config.document["data"].as_object().expect("data");
    for key in data.keys() {
        assert!(
            !(key.contains("KEY") || key == "DATABASE_URL"),
            "{key} belongs in the Secret"
        );
    }
    let secret = manifests
        .iter()
        .find(|m| m.kind() == "Secret")
        .expect("a Secret");
    // The secret key too: the data folder is an emptyDir per pod, where each replica would
    // make a key of its own, and the replicas must share one (approvals, sealed tokens).
    for key in ["BOTCRAFT_API_KEY", "DATABASE_URL", "BOTCRAFT_SECRET_KEY"] {
        assert!(
            secret.document["stringData"].get(key).is_some(),
            "{key} not in the Secret"
        );
    }
    let url = secret.document["stringData"]["DATABASE_URL"]
        .as_str()
        .unwrap_or_default();
    assert!(url.starts_with("postgres://"), "the store is PostgreSQL");
}

#[test]
fn the_deployment_doc_names_every_variable_the_deployment_sets() {
    let doc = read("docs/deployment.md");
    let file = dockerfile();
    let mut variables: BTreeSet<String> = runtime(&file).env().into_keys().collect();
    for manifest in k8s() {
        for section in ["data", "stringData"] {
            if let Some(map) = manifest.document[section].as_object() {
                variables.extend(map.keys().cloned());
            }
        }
    }
    for variable in variables {
        assert!(
            doc.contains(&format!("`{variable}`")),
            "docs/deployment.md does not document `{variable}`"
        );
    }
    // The scripts that build, run and validate what this page describes.
    for script in [
        "scripts/image.sh",
        "scripts/image-test.sh",
        "scripts/k8s-validate.sh",
    ] {
        assert!(
            doc.contains(&format!("`{script}`")),
            "docs/deployment.md does not name `{script}`"
        );
        assert!(root().join(script).is_file(), "{script} is missing");
    }
}

#[test]
fn every_variable_botcraft_reads_is_documented() {
    let doc = read("docs/deployment.md");
    let mut read_by_cli = BTreeSet::new();
    let mut folders = vec![root().join("apps/bot-craft/src")];
    let mut files = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a source file");
        for part in text.split("env = \"").skip(1) {
            if let Some((name, _)) = part.split_once('"') {
                read_by_cli.insert(name.to_owned());
            }
        }
    }
    assert!(read_by_cli.contains("BOTCRAFT_ADDR"), "{read_by_cli:?}");
    for variable in read_by_cli {
        assert!(
            doc.contains(&format!("`{variable}`")),
            "botcraft reads `{variable}`; docs/deployment.md does not document it"
        );
    }
}

#[test]
fn the_image_installs_the_embedding_model_the_suite_uses_and_points_botcraft_at_it() {
    let file = dockerfile();
    let model = file.stage("model").expect("a `model` stage");
    let run = model.last("RUN").expect("a RUN").args.text();
    assert!(
        run.contains("embedding-model-setup.sh"),
        "the model comes from the suite's own setup script: {run}"
    );
    let stage = runtime(&file);
    let copy = stage
        .all("COPY")
        .find(|c| c.flag("from") == Some("model"))
        .expect("the runtime copies the model");
    let words = copy.args.words();
    let destination = words.last().expect("a destination");
    assert_eq!(
        stage.env().get("BOTCRAFT_EMBEDDING_MODEL"),
        Some(destination),
        "BOTCRAFT_EMBEDDING_MODEL names the copied folder"
    );
}

/// The graph `docs/architecture.md` carries, between these markers.
const GRAPH_BEGIN: &str = "<!-- crate graph: begin -->";
const GRAPH_END: &str = "<!-- crate graph: end -->";

/// The most modules one import circle inside a crate may hold (issue 35: the manager's was 15).
const MAX_CIRCLE: usize = 5;

#[test]
fn no_crate_has_an_import_circle_of_more_than_five_modules() {
    let mut checked = 0;
    let mut too_large = Vec::new();
    for folder in ["crates", "apps"] {
        let members = std::fs::read_dir(root().join(folder)).expect("read the members");
        for member in members {
            let src = member.expect("a member").path().join("src");
            if !src.is_dir() {
                continue;
            }
            checked += 1;
            let circles = deploy_check::imports::module_circles(&src).expect("read the sources");
            if let Some(largest) = circles.first() {
                // The facts docs/architecture.md quotes (`--nocapture` shows them).
                eprintln!("{}: {}", src.display(), largest.join(", "));
            }
            if let Some(largest) = circles.first().filter(|c| c.len() > MAX_CIRCLE) {
                too_large.push(format!("{}: {}", src.display(), largest.join(", ")));
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} crates were found under crates/ and apps/"
    );
    assert!(
        too_large.is_empty(),
        "import circles of more than {MAX_CIRCLE} modules (make the modules beside the \
         owner hold data and pure rules that never name it):\n{}",
        too_large.join("\n")
    );
}

#[test]
fn dependencies_point_down_and_the_architecture_doc_shows_the_graph() {
    let workspace = workspace();
    let graph = workspace.graph();
    eprintln!("{graph}");
    for (name, deps) in &workspace.dependencies {
        for dep in deps {
            assert!(
                !workspace.apps.contains(dep),
                "{name} depends on the app {dep}: logic belongs in crates/"
            );
        }
    }
    let refused = [
        // The manager manages servers; bots and bindings are the toolset's.
        ("mcp-lifecycle", "toolset"),
        ("mcp-lifecycle", "inference"),
        ("mcp-lifecycle", "http-api"),
        // Nor a store: configs, tool caches and OAuth records come through its
        // `ServerRecords`, which `server-records` implements over the store.
        ("mcp-lifecycle", "store"),
        ("store", "server-records"),
        // One connection knows no store, no manager and no bots.
        ("mcp-client", "store"),
        ("mcp-client", "mcp-lifecycle"),
        ("mcp-client", "toolset"),
        // The gateway names tools through the toolset, not the chat crate.
        ("mcp-gateway", "inference"),
        ("mcp-gateway", "http-api"),
        // Domain crates stay below the services.
        ("inference", "mcp-lifecycle"),
        ("inference", "store"),
        ("tool-search", "embedding"),
        ("tool-search", "store"),
        ("store", "mcp-lifecycle"),
        ("toolset", "http-api"),
        // A turn's MCP tools are a service under the HTTP surface, not part of it.
        ("chat-tools", "http-api"),
        ("toolset", "mcp-gateway"),
        // Processes by identity are a leaf: servers and the host both build on it.
        ("proc-tree", "mcp-lifecycle"),
        ("proc-tree", "server-kit"),
    ];
    for (from, to) in refused {
        assert!(
            !workspace.depends_on(from, to),
            "{from} must not depend on {to}"
        );
    }
    let doc = read("docs/architecture.md");
    let inside = doc
        .split_once(GRAPH_BEGIN)
        .and_then(|(_, rest)| rest.split_once(GRAPH_END))
        .map(|(inside, _)| {
            inside
                .trim()
                .trim_start_matches("```text")
                .trim_end_matches("```")
                .trim()
        })
        .expect("docs/architecture.md has the crate graph between its markers");
    assert_eq!(inside, graph, "docs/architecture.md's crate graph is stale");
}

#[test]
fn kubernetes_pods_cannot_reach_the_clouds_metadata_services() {
    let manifests = k8s();
    let deployment = manifests
        .iter()
        .find(|m| m.kind() == "Deployment")
        .expect("a Deployment");
    let pod_labels = &deployment.document["spec"]["template"]["metadata"]["labels"];
    let policy = manifests
        .iter()
        .find(|m| m.kind() == "NetworkPolicy")
        .expect("a NetworkPolicy");
    let spec = &policy.document["spec"];
    // It selects the pods (every label it matches is one of theirs).
    let selector = spec["podSelector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    assert!(!selector.is_empty());
    for (key, value) in selector {
        assert_eq!(&pod_labels[key], value, "{key}");
    }
    assert_eq!(spec["policyTypes"], serde_json::json!(["Egress"]));
    // One rule, whose blocks leave out the metadata addresses, and nothing else of the
    // link-local range (NodeLocal DNSCache lives there).
    let rules = spec["egress"].as_array().expect("egress rules");
    assert_eq!(
        rules.len(),
        1,
        "another rule could allow what this one leaves out"
    );
    let peers = rules[0]["to"].as_array().expect("to");
    // The cluster's own pods (kube-dns, the database) by selector, never an address range.
    assert_eq!(peers[0], serde_json::json!({"namespaceSelector": {}}));
    let blocks: Vec<(&str, Vec<&str>)> = peers[1..]
        .iter()
        .map(|to| {
            let block = &to["ipBlock"];
            let except = block["except"]
                .as_array()
                .map(|list| list.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            (block["cidr"].as_str().expect("cidr"), except)
        })
        .collect();
    assert_eq!(
        blocks,
        vec![
            (
                "0.0.0.0/0",
                vec![
                    "169.254.169.254/32",
                    "169.254.170.2/32",
                    "169.254.170.23/32",
                    "100.100.100.200/32"
                ]
            ),
            ("::/0", vec!["fd00:ec2::254/128", "fd00:ec2::23/128"]),
        ]
    );
}

#[test]
fn kubernetes_runs_two_replicas_that_drain_one_at_a_time_with_sticky_sessions() {
    let manifests = k8s();
    let find = |kind: &str| {
        manifests
            .iter()
            .find(|m| m.kind() == kind)
            .unwrap_or_else(|| panic!("a {kind}"))
    };
    let deployment = &find("Deployment").document;
    assert!(deployment["spec"]["replicas"].as_u64() >= Some(2));
    let labels = &deployment["spec"]["selector"]["matchLabels"];
    // Voluntary disruptions leave one replica serving.
    let budget = &find("PodDisruptionBudget").document;
    assert_eq!(&budget["spec"]["selector"]["matchLabels"], labels);
    assert_eq!(budget["spec"]["minAvailable"].as_u64(), Some(1));
    // /mcp sessions (2025-11-25) live in one replica's memory.
    let service = &find("Service").document;
    assert_eq!(service["spec"]["sessionAffinity"], "ClientIP");
    // Readiness goes false at SIGTERM, and the grace period covers that wait, the drain and
    // the servers' stop (serve's defaults: 10 s and 15 s).
    let config = &find("ConfigMap").document;
    let unready: u64 = config["data"]["BOTCRAFT_UNREADY_SECONDS"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("BOTCRAFT_UNREADY_SECONDS in the ConfigMap");
    assert!(unready > 0);
    let grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("a grace period");
    assert!(grace >= unready + 10 + 15, "grace {grace}s");
}
