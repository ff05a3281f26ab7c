//! Choosing a provider for a bot: model strings (`openai:gpt-4o`,
//! `anthropic:claude-sonnet-4-5`), the provider settings the edge parses
//! once (keys, base URLs, timeouts), and the errors raised when a bot is
//! used without what its model needs. Nothing here reads the environment.

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::{self, AnthropicProvider};
use super::openai::{self, OpenAiProvider};
use super::transport::error_chain;
use super::{Provider, ProviderKind};

/// A parsed model string: which provider, and the model name it knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub provider: ProviderKind,
    pub model: String,
}

impl ModelSpec {
    /// Parses `PROVIDER:MODEL`. The model part may itself contain colons
    /// (`openai:llama3.1:8b` for an Ollama tag).
    pub fn parse(spec: &str) -> Result<Self, ModelError> {
        let Some((prefix, model)) = spec.split_once(':') else {
            return Err(ModelError::MissingProviderPrefix {
                spec: spec.to_owned(),
            });
        };
        let provider = match prefix {
            "openai" => ProviderKind::OpenAi,
            "anthropic" => ProviderKind::Anthropic,
            _ => {
                return Err(ModelError::UnknownProvider {
                    spec: spec.to_owned(),
                    prefix: prefix.to_owned(),
                });
            }
        };
        if model.trim().is_empty() {
            return Err(ModelError::EmptyModelName {
                spec: spec.to_owned(),
            });
        }
        Ok(Self {
            provider,
            model: model.to_owned(),
        })
    }
}

/// Why a bot's model cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("model `{spec}` has no provider prefix: write `openai:MODEL` or `anthropic:MODEL`")]
    MissingProviderPrefix { spec: String },
    #[error("model `{spec}` names unknown provider `{prefix}`: use `openai` or `anthropic`")]
    UnknownProvider { spec: String, prefix: String },
    #[error("model `{spec}` has an empty model name")]
    EmptyModelName { spec: String },
    #[error("{variable} is not set for bot {bot} (model `{spec}`)")]
    MissingApiKey {
        bot: String,
        spec: String,
        provider: ProviderKind,
        variable: &'static str,
    },
}

/// OpenAI-compatible endpoint settings.
#[derive(Clone, Default)]
pub struct OpenAiSettings {
    pub api_key: Option<String>,
    /// `OPENAI_BASE_URL` semantics; `None` is [`openai::DEFAULT_BASE_URL`].
    pub base_url: Option<String>,
}

/// Whether the key is set, never the key; the base URL as it may be shown.
impl std::fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::transport::debug_endpoint(
            f,
            "OpenAiSettings",
            self.api_key.as_ref(),
            self.base_url.as_deref(),
        )
    }
}

/// Anthropic endpoint settings.
#[derive(Clone, Default)]
pub struct AnthropicSettings {
    pub api_key: Option<String>,
    /// `None` is [`anthropic::DEFAULT_BASE_URL`].
    pub base_url: Option<String>,
}

/// Whether the key is set, never the key; the base URL as it may be shown.
impl std::fmt::Debug for AnthropicSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        super::transport::debug_endpoint(
            f,
            "AnthropicSettings",
            self.api_key.as_ref(),
            self.base_url.as_deref(),
        )
    }
}

/// Deadlines of provider HTTP calls.
#[derive(Debug, Clone, Copy)]
pub struct HttpTimeouts {
    /// Establishing the connection.
    pub connect: Duration,
    /// The longest wait for the next bytes: response headers, then every
    /// chunk of the stream. A provider silent for longer has stalled.
    pub idle: Duration,
}

impl Default for HttpTimeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(120),
        }
    }
}

/// Everything needed to talk to the providers, parsed once at the edge.
#[derive(Debug, Clone, Default)]
pub struct ProviderSettings {
    pub openai: OpenAiSettings,
    pub anthropic: AnthropicSettings,
    pub timeouts: HttpTimeouts,
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("could not build the provider HTTP client: {detail}")]
pub struct ProviderSetupError {
    pub detail: String,
}

/// A provider chosen for a bot, with the model name to send it.
#[derive(Clone)]
pub struct SelectedModel {
    pub provider: Arc<dyn Provider>,
    pub model: String,
}

impl std::fmt::Debug for SelectedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectedModel")
            .field("provider", &self.provider.kind())
            .field("model", &self.model)
            .finish()
    }
}

/// The HTTP/2 flow-control window of one provider stream: what the provider may send ahead
/// of what BotCraft has read. A turn whose client stops reading stops reading its provider
/// (`crate::turn_events`); with HTTP/2 at most this much then waits in BotCraft per stream
/// (hyper's default is 2 MiB). A model's tokens arrive far slower than this drains.
pub const PROVIDER_STREAM_WINDOW: u32 = 64 * 1024;

/// Builds providers for bots from one shared HTTP client.
#[derive(Debug, Clone)]
pub struct Providers {
    client: reqwest::Client,
    settings: ProviderSettings,
}

impl Providers {
    pub fn new(settings: ProviderSettings) -> Result<Self, ProviderSetupError> {
        let client = reqwest::Client::builder()
            // No redirects: reqwest drops only `Authorization` on another host, so a redirect
            // would carry Anthropic's `x-api-key` (or a proxy's own headers) there.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.timeouts.connect)
            .http2_initial_stream_window_size(PROVIDER_STREAM_WINDOW)
            // Room for 256 streams' windows at once: a few stalled streams never use up the
            // connection's window and starve the others on it.
            .http2_initial_connection_window_size(PROVIDER_STREAM_WINDOW * 256)
            .build()
            .map_err(|error| ProviderSetupError {
                detail: error_chain(&error),
            })?;
        Ok(Self { client, settings })
    }

    /// The provider for `bot`'s model string. A key is required when the
    /// provider's default (public) base URL is used; a custom base URL (a
    /// local vLLM, llama.cpp or Ollama) may go without one.
    pub fn for_bot(&self, bot: &str, spec: &str) -> Result<SelectedModel, ModelError> {
        let parsed = ModelSpec::parse(spec)?;
        let idle = self.settings.timeouts.idle;
        let (base_url, api_key, default_url) = match parsed.provider {
            ProviderKind::OpenAi => (
                &self.settings.openai.base_url,
                &self.settings.openai.api_key,
                openai::DEFAULT_BASE_URL,
            ),
            ProviderKind::Anthropic => (
                &self.settings.anthropic.base_url,
                &self.settings.anthropic.api_key,
                anthropic::DEFAULT_BASE_URL,
            ),
        };
        let api_key = api_key.clone().filter(|key| !key.is_empty());
        let base_url = base_url
            .clone()
            .filter(|url| !url.is_empty())
            .unwrap_or_else(|| default_url.to_owned());
        if api_key.is_none() && base_url.trim_end_matches('/') == default_url {
            return Err(ModelError::MissingApiKey {
                bot: bot.to_owned(),
                spec: spec.to_owned(),
                provider: parsed.provider,
                variable: parsed.provider.api_key_variable(),
            });
        }
        let client = self.client.clone();
        let provider: Arc<dyn Provider> = match parsed.provider {
            ProviderKind::OpenAi => Arc::new(OpenAiProvider::new(client, base_url, api_key, idle)),
            ProviderKind::Anthropic => {
                Arc::new(AnthropicProvider::new(client, base_url, api_key, idle))
            }
        };
        Ok(SelectedModel {
            provider,
            model: parsed.model,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn debug_output_shows_no_key_and_no_url_credentials() {
        let settings = ProviderSettings {
            openai: OpenAiSettings {
                api_key: Some("sk-openai-secret".into()),
                base_url: Some("https://user:pw-secret@gw.example/v1?key=q-secret".into()),
            },
            anthropic: AnthropicSettings {
                api_key: Some("sk-ant-secret".into()),
                base_url: None,
            },
            ..ProviderSettings::default()
        };
        let providers = Providers::new(settings.clone()).expect("providers");
        let openai = openai::OpenAiProvider::new(
            reqwest::Client::new(),
            "https://user:pw-secret@gw.example/v1",
            Some("sk-openai-secret".into()),
            Duration::from_secs(1),
        );
        let shown = format!("{settings:?} {providers:?} {openai:?}");
        for secret in ["sk-openai-secret", "sk-ant-secret", "pw-secret", "q-secret"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("https://…@gw.example/v1"), "{shown}");
    }

    #[test]
    fn model_string_cases() {
        let cases = [
            (
                "openai:gpt-4o",
                Ok(ModelSpec {
                    provider: ProviderKind::OpenAi,
                    model: "gpt-4o".into(),
                }),
            ),
            (
                "anthropic:claude-sonnet-4-5",
                Ok(ModelSpec {
                    provider: ProviderKind::Anthropic,
                    model: "claude-sonnet-4-5".into(),
                }),
            ),
            (
                "openai:llama3.1:8b",
                Ok(ModelSpec {
                    provider: ProviderKind::OpenAi,
                    model: "llama3.1:8b".into(),
                }),
            ),
            (
                "gpt-4o",
                Err(ModelError::MissingProviderPrefix {
                    spec: "gpt-4o".into(),
                }),
            ),
            (
                "gemini:gemini-2.5-pro",
                Err(ModelError::UnknownProvider {
                    spec: "gemini:gemini-2.5-pro".into(),
                    prefix: "gemini".into(),
                }),
            ),
            (
                "openai:",
                Err(ModelError::EmptyModelName {
                    spec: "openai:".into(),
                }),
            ),
        ];
        for (spec, expected) in cases {
            assert_eq!(ModelSpec::parse(spec), expected, "{spec}");
        }
    }

    fn providers(settings: ProviderSettings) -> Providers {
        Providers::new(settings).expect("client builds")
    }

    #[test]
    fn missing_key_is_reported_when_the_bot_is_used_and_names_the_variable() {
        let providers = providers(ProviderSettings::default());
        let error = providers
            .for_bot("support", "anthropic:claude-sonnet-4-5")
            .expect_err("no key");
        assert_eq!(
            error,
            ModelError::MissingApiKey {
                bot: "support".into(),
                spec: "anthropic:claude-sonnet-4-5".into(),
                provider: ProviderKind::Anthropic,
                variable: "ANTHROPIC_API_KEY",
            }
        );
        assert_eq!(
            error.to_string(),
            "ANTHROPIC_API_KEY is not set for bot support (model `anthropic:claude-sonnet-4-5`)"
        );
    }

    #[test]
    fn local_base_url_needs_no_key_and_keeps_the_model_name() {
        let providers = providers(ProviderSettings {
            openai: OpenAiSettings {
                api_key: None,
                base_url: Some("http://127.0.0.1:11434/v1".into()),
            },
            ..ProviderSettings::default()
        });
        let selected = providers
            .for_bot("local", "openai:qwen3:8b")
            .expect("no key needed");
        assert_eq!(selected.provider.kind(), ProviderKind::OpenAi);
        assert_eq!(selected.model, "qwen3:8b");
    }
}
