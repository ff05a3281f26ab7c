//! Secrets out of client-facing text: [`Redactor`] replaces every occurrence of a configured
//! secret (provider API keys, admin keys) with `[redacted]`. Provider error bodies can echo
//! what was sent to them; this runs on every error text a chat stream reports.

/// Replaces known secret values in text.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

/// Secrets shorter than this are not searched for (they would match ordinary words).
const MIN_SECRET_LEN: usize = 6;

impl Redactor {
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|secret| secret.len() >= MIN_SECRET_LEN)
            .collect();
        // Longest first, so a secret containing another is replaced whole.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        Self { secrets }
    }

    pub fn redact(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), "[redacted]")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_secret_occurrence_is_replaced() {
        let redactor = Redactor::new(["sk-live-123456", "abc", "sk-live-123456-extra"]);
        assert_eq!(
            redactor.redact("key sk-live-123456-extra and sk-live-123456; abc stays"),
            "key [redacted] and [redacted]; abc stays"
        );
    }
}
