//! `serve`'s HTTP API settings: the model providers, and the `ApiConfig` (keys with roles,
//! caps, the redactor of every known secret, the `tool_search` indexes over the model,
//! approvals, the OAuth client metadata).

use std::sync::Arc;
use std::time::Duration;

use http_api::{ApiConfig, ApiKeys, Redactor};
use inference::providers::{AnthropicSettings, HttpTimeouts, OpenAiSettings};
use inference::{ProviderSettings, Providers};

use super::ServeArgs;

/// The providers of `--openai-*` and `--anthropic-*`.
pub(super) fn providers(args: &ServeArgs) -> anyhow::Result<Providers> {
    Ok(Providers::new(ProviderSettings {
        openai: OpenAiSettings {
            api_key: args.openai_api_key.clone(),
            base_url: args.openai_base_url.clone(),
        },
        anthropic: AnthropicSettings {
            api_key: args.anthropic_api_key.clone(),
            base_url: args.anthropic_base_url.clone(),
        },
        timeouts: HttpTimeouts {
            idle: Duration::from_secs(args.provider_idle_seconds),
            ..HttpTimeouts::default()
        },
    })?)
}

/// What the API config is made of besides the arguments.
pub(super) struct Inputs<'a> {
    pub keys: &'a [String],
    pub chat_keys: &'a [String],
    /// Every secret value known, for the redactor.
    pub secrets: Vec<String>,
    pub embedder: Option<Arc<embedding::Embedder>>,
    pub store: &'a store::Store,
    pub public_url: &'a str,
    pub secret_keys: &'a Result<crate::host::Keys, String>,
}

/// The API's config; says on stderr how `tool_search` ranks.
pub(super) fn config(args: &ServeArgs, inputs: Inputs<'_>) -> ApiConfig {
    match &inputs.embedder {
        Some(model) => eprintln!(
            "botcraft: tool_search is hybrid: BM25F + {} ({} dimensions, model {})",
            model.folder().dir.display(),
            model.dimensions(),
            model.model_id()
        ),
        None => eprintln!(
            "botcraft: tool_search is BM25F only (set BOTCRAFT_EMBEDDING_MODEL to a model folder for hybrid ranking)"
        ),
    }
    ApiConfig {
        api_keys: ApiKeys::new(inputs.keys).with(inputs.chat_keys, http_api::Role::Chat),
        max_body_bytes: args.max_body_bytes,
        max_chat_messages: args.max_chat_messages,
        redactor: Redactor::new(inputs.secrets),
        catalogs: http_api::ToolCatalogs::new(
            search_index::SearchIndexes::new(inputs.embedder, Some(inputs.store.clone()))
                .with_progress(
                    // A large cold build (tens of ms per tool text) says how far it is; so does
                    // /api/health's toolSearch.building, which the dashboard shows.
                    search_index::in_steps(10, |progress| {
                        if progress.total >= 64 {
                            tracing::info!(
                                embedded = progress.embedded,
                                total = progress.total,
                                "embedding tool texts for tool_search"
                            );
                        }
                    }),
                ),
        ),
        oauth_client_metadata: http_api::routes::oauth::client_metadata_document(
            inputs.public_url,
            crate::host::CLIENT_NAME,
        ),
        approvals: approval_settings(args, inputs.secret_keys),
        chat_streams: http_api::chat_streams::ChatStreams::new(
            http_api::chat_streams::StreamLimits {
                total: args.max_chat_streams.max(1),
                per_key: args.max_chat_streams_per_key.max(1),
            },
        ),
        chat_buffer_bytes: args.chat_buffer_bytes.max(1),
        ..ApiConfig::default()
    }
}

/// Approval ids are signed with a key derived from BotCraft's key bound to the store's share
/// ([`crate::host::Keys`]), so every replica over one store accepts the others' approvals and
/// a stolen key file alone forges none; without a usable key, with one of this process alone
/// (said on stderr).
fn approval_settings(
    args: &ServeArgs,
    keys: &Result<crate::host::Keys, String>,
) -> http_api::ApprovalSettings {
    let ttl = Duration::from_secs(args.approval_ttl_seconds.max(1));
    match keys {
        Ok(keys) => http_api::ApprovalSettings {
            key: keys.bound.derive("tool approvals"),
            ttl,
        },
        Err(error) => {
            eprintln!(
                "botcraft: tool approvals are signed with a key of this process only ({error}); they do not survive a restart"
            );
            http_api::ApprovalSettings {
                ttl,
                ..http_api::ApprovalSettings::default()
            }
        }
    }
}
