//! The store's side of the manager's edge: [`StoreRecords`] implements `mcp-lifecycle`'s
//! [`ServerRecords`] over [`store::Store`] (server configs, the tool cache, the sealed OAuth
//! records of servers and of bots), and [`server_config`] turns a stored
//! [`store::McpServer`] into the lifecycle's [`ServerConfig`]. Neither crate knows the
//! other; the app puts them together here (`McpServerManager::new(records(store), …)`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mcp_lifecycle::{
    CachedToolList, RecordOwner, RecordsError, RemoteEndpoint, RemoteTransport, ServerConfig,
    ServerRecords,
};
use serde_json::Value;

/// The manager's records in `store`, ready for `McpServerManager::new`.
pub fn records(store: store::Store) -> Arc<dyn ServerRecords> {
    Arc::new(StoreRecords(store))
}

/// [`ServerRecords`] over a [`store::Store`].
#[derive(Clone)]
pub struct StoreRecords(pub store::Store);

fn failed(error: store::StoreError) -> RecordsError {
    RecordsError::new(error)
}

#[async_trait]
impl ServerRecords for StoreRecords {
    async fn servers(&self) -> Result<Vec<ServerConfig>, RecordsError> {
        let servers = self.0.servers().await.map_err(failed)?;
        Ok(servers.iter().map(server_config).collect())
    }

    async fn tool_cache(&self, server_id: &str) -> Result<Option<CachedToolList>, RecordsError> {
        let cache = self.0.tool_cache(server_id).await.map_err(failed)?;
        Ok(cache.map(|cache| CachedToolList {
            tools: cache.tools,
            captured_at: cache.captured_at,
        }))
    }

    async fn put_tool_cache(&self, server_id: &str, tools: &[Value]) -> Result<(), RecordsError> {
        self.0
            .put_tool_cache(server_id, tools)
            .await
            .map(drop)
            .map_err(failed)
    }

    async fn oauth_record(
        &self,
        server_id: &str,
        bot: RecordOwner<'_>,
    ) -> Result<Option<String>, RecordsError> {
        match bot {
            None => self.0.oauth_record(server_id).await,
            Some(bot) => self.0.bot_oauth_record(server_id, bot).await,
        }
        .map_err(failed)
    }

    async fn put_oauth_record(
        &self,
        server_id: &str,
        bot: RecordOwner<'_>,
        sealed: &str,
    ) -> Result<(), RecordsError> {
        match bot {
            None => self.0.put_oauth_record(server_id, sealed).await,
            Some(bot) => self.0.put_bot_oauth_record(server_id, bot, sealed).await,
        }
        .map_err(failed)
    }

    async fn delete_oauth_record(
        &self,
        server_id: &str,
        bot: RecordOwner<'_>,
    ) -> Result<(), RecordsError> {
        match bot {
            None => self.0.delete_oauth_record(server_id).await,
            Some(bot) => self.0.delete_bot_oauth_record(server_id, bot).await,
        }
        .map_err(failed)
    }

    async fn oauth_principals(&self, server_id: &str) -> Result<Vec<String>, RecordsError> {
        // The manager's principals are the bots, by id.
        self.0.bot_oauth_overrides(server_id).await.map_err(failed)
    }
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A stored server as the lifecycle runs it.
pub fn server_config(server: &store::McpServer) -> ServerConfig {
    ServerConfig {
        id: server.id.clone(),
        name: server.name.clone(),
        command: server.command.clone(),
        args: server.args.clone(),
        env: server.env.clone(),
        remote: remote_endpoint(server),
        call_timeout: millis(server.timeout),
        init_timeout: millis(server.init_timeout),
        always_on: server.always_on,
        idle_timeout: millis(server.idle_timeout_ms),
        sandbox: server.sandbox.clone(),
        version: server.updated_at,
    }
}

fn remote_endpoint(server: &store::McpServer) -> Option<RemoteEndpoint> {
    let transport = match server.transport {
        store::Transport::Stdio => return None,
        store::Transport::StreamableHttp => RemoteTransport::StreamableHttp,
        store::Transport::Sse => RemoteTransport::Sse,
    };
    Some(RemoteEndpoint {
        transport,
        url: server.url.clone().unwrap_or_default(),
        headers: server.headers.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_lifecycle_names_each_remote_transport_as_the_store_does() {
        for transport in store::Transport::ALL {
            let lifecycle = match transport {
                store::Transport::Stdio => continue,
                store::Transport::StreamableHttp => RemoteTransport::StreamableHttp,
                store::Transport::Sse => RemoteTransport::Sse,
            };
            assert_eq!(
                mcp_lifecycle::transport_name(lifecycle),
                transport.as_str(),
                "{transport:?}"
            );
        }
    }

    #[tokio::test]
    async fn configs_tool_caches_and_oauth_records_round_trip_through_the_store()
    -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store =
            store::Store::connect(&store::sqlite_url(&dir.path().join("records.db"))).await?;
        let local = store
            .create_server(&store::McpServerSpec::new("local", "forge-bash"))
            .await?;
        let hosted = store
            .create_server(&store::McpServerSpec::remote(
                "hosted",
                store::Transport::Sse,
                "https://example.test/sse",
            ))
            .await?;
        let bot = store
            .create_bot(&store::BotSpec::new("helper", "openai:gpt"))
            .await?;
        let records = records(store.clone());

        let configs = records.servers().await?;
        let expected: Vec<ServerConfig> =
            [&hosted, &local].into_iter().map(server_config).collect();
        let mut got = configs.clone();
        got.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(got, expected);
        assert_eq!(
            got[0]
                .remote
                .as_ref()
                .map(|r| (r.transport, r.url.as_str())),
            Some((RemoteTransport::Sse, "https://example.test/sse"))
        );
        assert_eq!(
            (got[1].remote.is_none(), got[1].version),
            (true, local.updated_at)
        );

        assert_eq!(records.tool_cache(&local.id).await?, None);
        let tools = vec![serde_json::json!({"name": "run", "inputSchema": {"type": "object"}})];
        records.put_tool_cache(&local.id, &tools).await?;
        let cached = records.tool_cache(&local.id).await?;
        assert_eq!(cached.map(|c| c.tools), Some(tools));

        // The server's record and a bot's own one are kept apart.
        records
            .put_oauth_record(&hosted.id, None, "sealed-server")
            .await?;
        records
            .put_oauth_record(&hosted.id, Some(&bot.id), "sealed-bot")
            .await?;
        assert_eq!(
            (
                records.oauth_record(&hosted.id, None).await?,
                records.oauth_record(&hosted.id, Some(&bot.id)).await?,
                records.oauth_principals(&hosted.id).await?,
            ),
            (
                Some("sealed-server".to_owned()),
                Some("sealed-bot".to_owned()),
                vec![bot.id.clone()]
            )
        );
        records
            .delete_oauth_record(&hosted.id, Some(&bot.id))
            .await?;
        records
            .delete_oauth_record(&hosted.id, Some(&bot.id))
            .await?;
        assert_eq!(
            (
                records.oauth_record(&hosted.id, None).await?,
                records.oauth_record(&hosted.id, Some(&bot.id)).await?,
                records.oauth_principals(&hosted.id).await?,
            ),
            (Some("sealed-server".to_owned()), None, vec![])
        );

        // A store failure reaches the manager as a records error, the store's message kept.
        let missing = records
            .put_oauth_record("no-such-server", None, "sealed")
            .await
            .err()
            .map(|error| error.to_string());
        assert!(missing.is_some_and(|message| message.contains("no-such-server")));
        Ok(())
    }
}
