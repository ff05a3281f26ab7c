//! The MCP Registry's `server.json` (schema 2025-12-11, and the camelCase 2025-09-29 and
//! 2025-10-17 schemas it extends) as a server config: [`parse_server_json`].
//!
//! - The document may be bare or wrapped as the registry API answers (`{"server": {…},
//!   "_meta": …}`).
//! - **What is imported**: one server, from the first way to run it BotCraft can use, in the
//!   order `prefer` asks: packages (`npm` → `npx -y ID@VERSION`, `pypi` → `uvx ID==VERSION`,
//!   `oci` → `docker run -i --rm IMAGE`; `runtimeHint` replaces the default runtime with
//!   another known one for that registry (`bunx`, `pnpx`; `pipx`; `podman`), never with an
//!   arbitrary program; only `stdio` packages) or remotes (`streamable-http`, `sse`, with their headers). The other
//!   ways are reported as skipped, with why (`nuget`, `mcpb`, an HTTP package, a URL template
//!   with a variable that has no value).
//! - **Arguments**: `runtimeArguments` reach the runtime itself, so of those only `-y`/`--yes`
//!   are taken and the rest named in `notes`; then the package, then `packageArguments`:
//!   positional ones are their `value` (else `default`); named ones `--flag=value`, or the
//!   bare flag when they have no value. `{variables}` in a value are replaced by the
//!   variable's value or default. A required argument with no value at all is written as its
//!   `valueHint` and reported in `notes`: arguments take no `${VAR}`.
//! - **Environment and headers**: a secret, or a required input without a value, becomes a
//!   placeholder named after the server (resolved at start from BotCraft's environment under
//!   the allow-list, never stored); other inputs take their value, else their default, else
//!   are left out. For server `weather`, a header's variable is named from the header
//!   (`X-API-Key` → `${WEATHER__X_API_KEY}`), a `{variable}` inside a value from the variable
//!   (`Bearer {api_key}` → `Bearer ${WEATHER__API_KEY}`). A `{variable}` the input does not
//!   declare, a `${…}` in the document, or a `$`, `{` or `}` in a variable's value is refused:
//!   a document never names a variable of BotCraft's itself (the API also refuses an import
//!   whose variables another server uses).
//! - The name is the part after the `/` of the registry name, made a valid server name,
//!   unless one is given.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::import::{ImportPlan, SkipReason, Skipped};
use crate::model::{McpServerSpec, Transport};
use crate::validate;

/// Which kind of entry to take first when a document offers both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RegistryPreference {
    /// A package run here (stdio), else a remote.
    #[default]
    Package,
    /// A remote, else a package.
    Remote,
}

/// A document that is not a `server.json`.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("not a server.json document: {reason}")]
    NotServerJson { reason: String },
    #[error("server.json {name:?} offers no package or remote BotCraft can run: {}", reasons.join("; "))]
    NothingRunnable { name: String, reasons: Vec<String> },
}

/// Whether `document` looks like a `server.json` (bare or wrapped) rather than an
/// `mcpServers` file.
pub fn is_server_json(document: &Value) -> bool {
    let server = document.get("server").unwrap_or(document);
    server.get("packages").is_some()
        || server.get("remotes").is_some()
        || server
            .get("$schema")
            .and_then(Value::as_str)
            .is_some_and(|schema| schema.contains("server.schema.json"))
}

/// The server config `document` describes (see the module docs), as an import plan of one
/// server; `notes` say what the operator still has to provide.
pub fn parse_server_json(
    document: &Value,
    name: Option<&str>,
    prefer: RegistryPreference,
) -> Result<(ImportPlan, Vec<String>), RegistryError> {
    let server = document.get("server").unwrap_or(document);
    let object = server
        .as_object()
        .ok_or_else(|| RegistryError::NotServerJson {
            reason: "not an object".into(),
        })?;
    let registry_name =
        object
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RegistryError::NotServerJson {
                reason: "no \"name\"".into(),
            })?;
    let server_name = name.map_or_else(|| local_name(registry_name), str::to_owned);
    let packages = list(object, "packages");
    let remotes = list(object, "remotes");
    let mut candidates: Vec<(String, Candidate<'_>)> = Vec::new();
    let package_entries = packages
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("packages[{i}]"), Candidate::Package(p)));
    let remote_entries = remotes
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("remotes[{i}]"), Candidate::Remote(r)));
    match prefer {
        RegistryPreference::Package => candidates.extend(package_entries.chain(remote_entries)),
        RegistryPreference::Remote => candidates.extend(remote_entries.chain(package_entries)),
    }
    let mut reasons = Vec::new();
    let mut chosen = None;
    for (label, candidate) in candidates {
        if chosen.is_some() {
            reasons.push(format!("{label}: another entry was imported"));
            continue;
        }
        let mut notes = Vec::new();
        let built = match candidate {
            Candidate::Package(package) => package_spec(&server_name, package, &mut notes),
            Candidate::Remote(remote) => remote_spec(&server_name, remote, &mut notes),
        };
        match built.and_then(|spec| {
            validate::server(&spec).map_err(|error| SkipReason::Invalid(error).to_string())?;
            Ok(spec)
        }) {
            Ok(spec) => chosen = Some((spec, notes, label)),
            Err(reason) => reasons.push(format!("{label}: {reason}")),
        }
    }
    let Some((mut spec, notes, label)) = chosen else {
        return Err(RegistryError::NothingRunnable {
            name: registry_name.to_owned(),
            reasons,
        });
    };
    if spec.instructions.is_none() {
        spec.instructions = object
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    let skipped = reasons
        .into_iter()
        .map(|reason| Skipped {
            name: server_name.clone(),
            reason: SkipReason::Registry { reason },
        })
        .collect();
    let mut notes = notes;
    notes.insert(
        0,
        format!("{server_name}: imported from {registry_name} {label}"),
    );
    Ok((
        ImportPlan {
            servers: vec![spec],
            skipped,
        },
        notes,
    ))
}

enum Candidate<'a> {
    Package(&'a Map<String, Value>),
    Remote(&'a Map<String, Value>),
}

fn list<'a>(object: &'a Map<String, Value>, key: &str) -> Vec<&'a Map<String, Value>> {
    object
        .get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn flag(object: &Map<String, Value>, key: &str) -> bool {
    object.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The part after the `/` of a registry name, as a server name.
fn local_name(registry_name: &str) -> String {
    let local = registry_name.rsplit('/').next().unwrap_or(registry_name);
    let cleaned: String = local
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(validate::MAX_NAME_LEN)
        .collect();
    // A valid server name: no `_` or `.` after another, none at the end (the tools' names
    // must say where the server's part ends: `validate::unambiguous_server_name`).
    let mut unambiguous = String::with_capacity(cleaned.len());
    for c in cleaned.chars() {
        let joiner = |c: char| matches!(c, '_' | '.');
        if !(joiner(c) && unambiguous.ends_with(joiner)) {
            unambiguous.push(c);
        }
    }
    let cleaned = unambiguous.trim_end_matches(['_', '.']);
    if cleaned.is_empty() {
        "server".into()
    } else {
        cleaned.to_owned()
    }
}

/// `name` as an environment variable name: upper case, `_` for anything else.
fn variable_name(name: &str) -> String {
    let mut variable: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if variable.starts_with(|c: char| c.is_ascii_digit()) {
        variable.insert(0, '_');
    }
    variable
}

/// The `${VAR}` a value of an imported server refers to for `variable`: named after the
/// server as well (`${WEATHER__API_KEY}` for server `weather`), so a registry document can
/// only ask for a variable of its own, never for one BotCraft already passes to another
/// server (`{typesense_search_key}` would otherwise read `${TYPESENSE_SEARCH_KEY}` and send
/// it wherever the document says).
fn placeholder_name(server: &str, variable: &str) -> String {
    format!("{}__{}", variable_name(server), variable_name(variable))
}

/// `value` with each `{variable}` replaced: a declared secret or required variable with no
/// value becomes the server's own `${SERVER__VARIABLE}` when `placeholders` is `Some(server)`
/// (env, headers), else stays for the caller to report; others take their value or default.
/// A variable the input does not declare, or a `${…}` reference written in the document
/// itself, is refused.
fn substitute(
    value: &str,
    input: &Map<String, Value>,
    placeholders: Option<&str>,
) -> Result<String, String> {
    if value.contains("${") {
        return Err("value holds a ${…} reference of its own".to_owned());
    }
    let variables = input.get("variables").and_then(Value::as_object);
    let mut out = String::new();
    let mut rest = value;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let key = &rest[open + 1..open + close];
        out.push_str(&rest[..open]);
        let variable = variables
            .and_then(|v| v.get(key))
            .and_then(Value::as_object)
            .ok_or_else(|| format!("variable {{{key}}} is not declared"))?;
        let known = (!flag(variable, "isSecret"))
            .then(|| text(variable, "value").or_else(|| text(variable, "default")))
            .flatten();
        // A value put in an env or header value is text, never a reference (or a piece of
        // one) of its own; arguments and URLs expand no reference.
        if placeholders.is_some() && known.is_some_and(|known| known.contains(['$', '{', '}'])) {
            return Err(format!("variable {{{key}}}'s value holds $, {{ or }}"));
        }
        match (known, placeholders) {
            (Some(known), _) => out.push_str(known),
            (None, Some(server)) => {
                out.push_str(&format!("${{{}}}", placeholder_name(server, key)));
            }
            (None, None) => return Err(format!("variable {{{key}}} has no value")),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An env var's or header's value of `server` (`None`: left out, with the reason in `notes`
/// when it could not be read), and the `${VAR}`s it needs.
fn input_value(
    server: &str,
    input: &Map<String, Value>,
    variable: &str,
    notes: &mut Vec<String>,
) -> Option<(String, Vec<String>)> {
    let own = placeholder_name(server, variable);
    if flag(input, "isSecret") && text(input, "value").is_none_or(|v| !v.contains('{')) {
        return Some((format!("${{{own}}}"), vec![own]));
    }
    if let Some(value) = text(input, "value").or_else(|| text(input, "default")) {
        // A value that cannot be read (an undeclared variable, a reference of its own) is
        // left out rather than stored as written.
        let resolved = match substitute(value, input, Some(server)) {
            Ok(resolved) => resolved,
            Err(reason) => {
                notes.push(format!("{server}: {variable} left out: {reason}"));
                return None;
            }
        };
        let needs = env_template::parse_env_value(&resolved)
            .ok()?
            .into_iter()
            .filter_map(|segment| match segment {
                env_template::EnvSegment::Reference(name) => Some(name.to_owned()),
                env_template::EnvSegment::Literal(_) => None,
            })
            .collect();
        return Some((resolved, needs));
    }
    flag(input, "isRequired").then(|| (format!("${{{own}}}"), vec![own]))
}

fn arguments(items: Option<&Value>, notes: &mut Vec<String>, server: &str) -> Vec<String> {
    let mut args = Vec::new();
    for item in items.and_then(Value::as_array).into_iter().flatten() {
        let Some(argument) = item.as_object() else {
            continue;
        };
        let value = text(argument, "value").or_else(|| text(argument, "default"));
        let resolved = value.map(|value| {
            substitute(value, argument, None).unwrap_or_else(|reason| {
                notes.push(format!(
                    "{server}: argument {value:?}: {reason}; edit it in the config"
                ));
                value.to_owned()
            })
        });
        match (text(argument, "type"), resolved) {
            (Some("named"), resolved) => {
                let Some(name) = text(argument, "name") else {
                    continue;
                };
                match resolved {
                    Some(value) => args.push(format!("{name}={value}")),
                    None if flag(argument, "isRequired") => {
                        notes.push(format!(
                            "{server}: argument {name} needs a value; edit it in the config"
                        ));
                        args.push(name.to_owned());
                    }
                    None => {}
                }
            }
            (_, Some(value)) => args.push(value),
            (_, None) if flag(argument, "isRequired") => {
                let hint = text(argument, "valueHint").unwrap_or("value");
                notes.push(format!(
                    "{server}: argument <{hint}> needs a value; edit it in the config"
                ));
                args.push(format!("<{hint}>"));
            }
            _ => {}
        }
    }
    args
}

fn package_spec(
    server: &str,
    package: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<McpServerSpec, String> {
    let registry_type = text(package, "registryType").unwrap_or("unknown");
    let transport = package
        .get("transport")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("stdio");
    if transport != "stdio" {
        return Err(format!(
            "a {transport} package (run here and reached over HTTP) is not supported; use its remote"
        ));
    }
    let identifier = text(package, "identifier").ok_or("no \"identifier\"")?;
    package_identifier(registry_type, identifier)?;
    let version = text(package, "version");
    // A version is never another package (`npm:other@1`, a URL, `github:x/y`) nor an option.
    if let Some(v) = version
        && (v.starts_with('-') || v.contains([':', '/', '\\']) || v.contains(char::is_whitespace))
    {
        return Err(format!("the version {v:?} is not a version"));
    }
    // What runs is what the registry serves under that name at each start, unless a version
    // pins it: say so when none does.
    let exact = |v: &str| {
        v.chars().next().is_some_and(|c| c.is_ascii_digit())
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
    };
    let pinned = match registry_type {
        "oci" => {
            identifier.contains('@')
                || identifier
                    .rsplit('/')
                    .next()
                    .and_then(|last| last.split_once(':'))
                    .is_some_and(|(_, tag)| tag != "latest")
        }
        _ => version.is_some_and(exact),
    };
    if !pinned {
        notes.push(format!(
            "{server}: {identifier} is not pinned to a version ({}): each start runs whatever the registry serves then; pin one in the config",
            version.unwrap_or("none given")
        ));
    }
    let (runtime, coordinate) = match registry_type {
        "npm" => (
            "npx",
            version.map_or_else(|| identifier.to_owned(), |v| format!("{identifier}@{v}")),
        ),
        "pypi" => (
            "uvx",
            version.map_or_else(|| identifier.to_owned(), |v| format!("{identifier}=={v}")),
        ),
        "oci" => ("docker", identifier.to_owned()),
        other => {
            return Err(format!(
                "{other} packages are not supported (npm, pypi and oci are)"
            ));
        }
    };
    // A hint names the runtime, never an arbitrary program: one of those known for the
    // package's registry (a document could otherwise ask for `sh -c …`).
    let known: &[&str] = match registry_type {
        "npm" => &["npx", "bunx", "pnpx"],
        "pypi" => &["uvx", "pipx"],
        _ => &["docker", "podman"],
    };
    let command = text(package, "runtimeHint").unwrap_or(runtime);
    if !known.contains(&command) {
        return Err(format!(
            "runtimeHint {command:?} is not a runtime BotCraft runs {registry_type} packages with ({})",
            known.join(", ")
        ));
    }
    // Runtime arguments reach the runtime itself (`npx -c CMD`, `docker run --privileged -v
    // /:/host`): from a third-party document only `-y`/`--yes` are taken; the rest are named
    // in the notes for an operator to add if they trust them.
    let (mut args, dropped): (Vec<String>, Vec<String>) =
        arguments(package.get("runtimeArguments"), notes, server)
            .into_iter()
            .partition(|arg| arg == "-y" || arg == "--yes");
    if !dropped.is_empty() {
        notes.push(format!(
            "{server}: runtime arguments not imported (add them if you trust them): {}",
            dropped.join(" ")
        ));
    }
    let mut env = BTreeMap::new();
    let mut needs = Vec::new();
    for input in list(package, "environmentVariables") {
        let Some(name) = text(input, "name") else {
            continue;
        };
        // A value of the document's own for such a key is refused; left for the operator
        // (a placeholder), it is the operator's choice.
        if validate::is_package_source_key(name)
            && (text(input, "value").is_some() || text(input, "default").is_some())
        {
            return Err(format!(
                "it sets {name}, which chooses where a package comes from or what is trusted"
            ));
        }
        if let Some((value, need)) = input_value(server, input, name, notes) {
            env.insert(name.to_owned(), value);
            needs.extend(need);
        }
    }
    match command {
        "npx" if !args.iter().any(|a| a == "-y" || a == "--yes") => args.insert(0, "-y".into()),
        "docker" if args.is_empty() => {
            args = vec!["run".into(), "-i".into(), "--rm".into()];
            // The container sees only the variables named here (values come from the server's env).
            for name in env.keys() {
                args.push("-e".into());
                args.push(name.clone());
            }
        }
        _ => {}
    }
    args.push(coordinate);
    args.extend(arguments(package.get("packageArguments"), notes, server));
    if !needs.is_empty() {
        notes.push(format!(
            "{server}: set {} in BotCraft's environment and allow it (BOTCRAFT_SERVER_ENV)",
            needs.join(", ")
        ));
    }
    let mut spec = McpServerSpec::new(server, command);
    spec.args = args;
    spec.env = env;
    Ok(spec)
}

/// Refuse an identifier that is not a package name of its registry: one that begins with
/// `-` would be read by the runtime as an option of its own (`npx -y --call=…`, `docker run
/// --privileged …`), and the runtime is never a shell.
fn package_identifier(registry_type: &str, identifier: &str) -> Result<(), String> {
    let allowed = |c: char| {
        c.is_ascii_alphanumeric()
            || match registry_type {
                "npm" => matches!(c, '-' | '.' | '_' | '~' | '@' | '/'),
                "pypi" => matches!(c, '-' | '.' | '_'),
                _ => matches!(c, '-' | '.' | '_' | '/' | ':' | '@'),
            }
    };
    if identifier.starts_with(['-', '.', '/', ':', '@'])
        && !(registry_type == "npm" && identifier.starts_with('@'))
        || !identifier.chars().all(allowed)
    {
        return Err(format!(
            "the identifier {identifier:?} is not a package name of the {registry_type} registry"
        ));
    }
    Ok(())
}

fn remote_spec(
    server: &str,
    remote: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<McpServerSpec, String> {
    let transport = match text(remote, "type").or_else(|| text(remote, "transport_type")) {
        Some("streamable-http" | "streamable" | "http") => Transport::StreamableHttp,
        Some("sse") => Transport::Sse,
        other => return Err(format!("remote type {other:?} is not one BotCraft speaks")),
    };
    let url = text(remote, "url").ok_or("no \"url\"")?;
    let url =
        substitute(url, remote, None).map_err(|reason| format!("the URL template's {reason}"))?;
    let mut spec = McpServerSpec::remote(server, transport, url);
    let mut needs = Vec::new();
    for input in list(remote, "headers") {
        let Some(name) = text(input, "name") else {
            continue;
        };
        if let Some((value, need)) = input_value(server, input, name, notes) {
            spec.headers.insert(name.to_owned(), value);
            needs.extend(need);
        }
    }
    if !needs.is_empty() {
        notes.push(format!(
            "{server}: set {} in BotCraft's environment and allow it (BOTCRAFT_SERVER_ENV)",
            needs.join(", ")
        ));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn names_and_variables_are_made_valid() {
        assert_eq!(local_name("io.github.user/weather"), "weather");
        assert_eq!(local_name("com.example/my server!"), "my-server-");
        assert_eq!(local_name("com.example/my__tools._x_"), "my_tools.x");
        assert_eq!(local_name("com.example/__"), "server");
        assert_eq!(variable_name("X-API-Key"), "X_API_KEY");
        assert_eq!(variable_name("1key"), "_1KEY");
    }

    #[test]
    fn values_substitute_their_variables() {
        let input = json!({
            "value": "Bearer {api_key} in {region}",
            "variables": {"api_key": {"isSecret": true}, "region": {"default": "eu"}}
        });
        let input = input.as_object().expect("object");
        assert_eq!(
            substitute("Bearer {api_key} in {region}", input, Some("weather")),
            Ok("Bearer ${WEATHER__API_KEY} in eu".to_owned())
        );
        assert!(substitute("{api_key}", input, None).is_err());
        // A variable the input does not declare, or a reference written in the document,
        // is refused: a document cannot name a variable BotCraft passes to another server.
        assert_eq!(
            substitute("{typesense_search_key}", input, Some("weather")),
            Err("variable {typesense_search_key} is not declared".to_owned())
        );
        assert_eq!(
            substitute("Bearer ${TYPESENSE_SEARCH_KEY}", input, Some("weather")),
            Err("value holds a ${…} reference of its own".to_owned())
        );
    }
}
