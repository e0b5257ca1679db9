//! Text a person is shown and asked to trust (an account to connect, an agent's name, a
//! payment authority's provider) must read as it is.

/// Whether `c` draws nothing or turns the text around it: Unicode's default-ignorable code
/// points (zero-width spaces and joiners, soft hyphen, variation selectors, fillers, tags)
/// and the bidirectional controls. `ana\u{ad}@x.com` shows as `ana@x.com`, and `\u{202e}`
/// shows what follows reversed (`\u{202e}cihporhtna` as "anthropic").
pub fn hides_or_reorders(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// Whether `s` has a control character, or one that [`hides_or_reorders`].
pub fn misleads(s: &str) -> bool {
    s.chars().any(|c| c.is_control() || hides_or_reorders(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_and_reordering_characters_are_caught_and_text_is_not() {
        for bad in [
            "ana\u{ad}@x.com",
            "\u{202e}cihporhtna",
            "a\u{200b}b",
            "\u{2066}x",
            "x\u{fe0f}",
            "tag\u{e0041}",
            "bell\u{7}",
            "\u{3164}",
        ] {
            assert!(misleads(bad), "{bad:?}");
        }
        for good in [
            "ana@example.com",
            "Ana María",
            "東京",
            "عربى",
            "emoji 🙂",
            "a-b_c.d",
        ] {
            assert!(!misleads(good), "{good:?}");
        }
    }
}
