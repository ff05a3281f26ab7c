//! What a turn keeps of one step's text for its own history: the first
//! [`TurnConfig::max_step_text_bytes`](crate::TurnConfig) bytes, and how many more streamed
//! to the client, said at the end. A long answer then costs the turn that much memory, not
//! its length, while the client still gets every byte as it streams.

/// A step's text as the turn keeps it: the first `max` bytes (at a character boundary), and
/// how many more streamed past.
pub(crate) struct KeptText {
    text: String,
    max: usize,
    dropped: usize,
}

impl KeptText {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            text: String::new(),
            max,
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, delta: &str) {
        let room = self.max.saturating_sub(self.text.len());
        if self.dropped == 0 && delta.len() <= room {
            self.text.push_str(delta);
            return;
        }
        let mut end = room.min(delta.len());
        while !delta.is_char_boundary(end) {
            end -= 1;
        }
        if self.dropped == 0 {
            self.text.push_str(&delta[..end]);
        } else {
            end = 0;
        }
        self.dropped += delta.len() - end;
    }

    pub(crate) fn finish(mut self) -> String {
        if self.dropped > 0 {
            self.text.push_str(&format!(
                "\n[BotCraft kept the first {} bytes of this answer in the conversation; {} more were shown to the user but are not kept here]",
                self.text.len(),
                self.dropped
            ));
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_step_keeps_its_first_bytes_and_says_how_many_more_streamed() {
        let kept = |max: usize, deltas: &[&str]| {
            let mut text = KeptText::new(max);
            for delta in deltas {
                text.push(delta);
            }
            text.finish()
        };
        assert_eq!(kept(10, &["hello ", "you"]), "hello you");
        assert_eq!(
            kept(8, &["hello ", "world", "!"]),
            "hello wo\n[BotCraft kept the first 8 bytes of this answer in the conversation; 4 more were shown to the user but are not kept here]"
        );
        // "é" is two bytes: a cut inside it keeps what precedes it.
        assert_eq!(
            kept(2, &["aé"]),
            "a\n[BotCraft kept the first 1 bytes of this answer in the conversation; 2 more were shown to the user but are not kept here]"
        );
    }
}
