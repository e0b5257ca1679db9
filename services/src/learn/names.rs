//! Action names (snake case, unique in the draft) and the words and path parts they are made
//! from; descriptions cut to one line.

use std::collections::HashSet;

/// Action names in use in the draft.
#[derive(Default)]
pub(super) struct Names(HashSet<String>);

impl Names {
    /// `base` if free, else `base_2`, `base_3`, ... (each at most 64 characters).
    pub(super) fn claim(&mut self, base: &str) -> String {
        let base = fit(base, 64);
        if self.0.insert(base.clone()) {
            return base;
        }
        let mut n = 2u32;
        loop {
            let suffix = format!("_{n}");
            let candidate = format!("{}{suffix}", fit(&base, 64 - suffix.len()));
            if self.0.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }

    pub(super) fn release(&mut self, name: &str) {
        self.0.remove(name);
    }
}

/// At most `max` bytes of an ASCII name, without a trailing `_`.
pub(super) fn fit(name: &str, max: usize) -> String {
    let mut end = name.len().min(max);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].trim_end_matches('_').to_owned()
}

/// An action name from an identifier: `getPetByID` -> `get_pet_by_id`; `[a-z][a-z0-9_]*`, at
/// most 64 characters; `None` when it has no letters or digits.
pub(super) fn snake_name(s: &str) -> Option<String> {
    let w = words(s);
    if w.is_empty() {
        return None;
    }
    let mut name = w.join("_");
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert_str(0, "op_");
    }
    Some(fit(&name, 64))
}

/// `{method}_{path words}`: `GET /pets/{petId}` -> `get_pets_by_pet_id`.
pub(super) fn fallback_name(method: &str, path: &str) -> String {
    let mut w = vec![method.to_ascii_lowercase()];
    for part in path_parts(path) {
        match part {
            Part::Lit(text) => w.extend(words(&text)),
            Part::Var(name) => {
                w.push("by".into());
                w.extend(words(&name));
            }
        }
    }
    if w.len() == 1 {
        w.push("root".into());
    }
    snake_name(&w.join("_")).unwrap_or_else(|| method.to_ascii_lowercase())
}

/// Lower-case ASCII words of an identifier, path or phrase, split at anything not a letter or
/// digit and at camel-case humps: `getHTTPServer2Id` -> `get`, `http`, `server2`, `id`.
pub(super) fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if !cur.is_empty() && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

pub(super) enum Part {
    Lit(String),
    Var(String),
}

/// A path template's literal text and `{name}` placeholders.
pub(super) fn path_parts(path: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if end > 0 && !after[..end].contains('{') => {
                if start > 0 {
                    parts.push(Part::Lit(rest[..start].to_owned()));
                }
                parts.push(Part::Var(after[..end].to_owned()));
                rest = &after[end + 1..];
            }
            _ => {
                parts.push(Part::Lit(rest[..=start].to_owned()));
                rest = after;
            }
        }
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_owned()));
    }
    parts
}

/// One trimmed line of at most `max` characters.
pub(super) fn one_line(s: &str, max: usize) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::MAX_DESCRIPTION;
    use crate::learn::fixtures::*;
    use serde_json::json;

    #[test]
    fn names_are_snake_case_bounded_and_unique() {
        assert_eq!(snake_name("getPetByID").as_deref(), Some("get_pet_by_id"));
        assert_eq!(
            snake_name("HTTPServerList").as_deref(),
            Some("http_server_list")
        );
        assert_eq!(snake_name("list-pets v2").as_deref(), Some("list_pets_v2"));
        assert_eq!(
            snake_name("pets.v2Create").as_deref(),
            Some("pets_v2_create")
        );
        assert_eq!(snake_name("123go").as_deref(), Some("op_123go"));
        assert_eq!(snake_name("Über_Größe").as_deref(), Some("ber_gr_e"));
        assert_eq!(snake_name("--").as_deref(), None);
        let long = snake_name(&"wordy".repeat(30)).unwrap();
        assert!(long.len() <= 64);
        assert_eq!(
            fallback_name("get", "/pets/{petId}/photos"),
            "get_pets_by_pet_id_photos"
        );
        assert_eq!(fallback_name("post", "/"), "post_root");

        let mut names = Names::default();
        assert_eq!(names.claim("list_pets"), "list_pets");
        assert_eq!(names.claim("list_pets"), "list_pets_2");
        assert_eq!(names.claim("list_pets"), "list_pets_3");
        let base = "a".repeat(64);
        assert_eq!(names.claim(&base), base);
        let second = names.claim(&base);
        assert_eq!(second.len(), 64);
        assert!(second.ends_with("_2"));

        // Two operations whose ids collide after conversion.
        let doc = json!({"openapi": "3.1.0", "paths": {
            "/a": {"get": {"operationId": "listPets", "responses": {}}},
            "/b": {"get": {"operationId": "list_pets", "responses": {}}},
            "/c": {"get": {"operationId": "list-pets", "responses": {}}}
        }});
        let draft = learn(Some(&doc), &[]).unwrap();
        assert_valid(&draft);
        let names: Vec<&str> = draft
            .document
            .actions
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["list_pets", "list_pets_2", "list_pets_3"]);
    }

    #[test]
    fn words_split_identifiers_and_paths() {
        assert_eq!(words("getHTTPServer2Id"), ["get", "http", "server2", "id"]);
        assert_eq!(words("/v1/pets/{petId}"), ["v1", "pets", "pet", "id"]);
        assert_eq!(words("user[email]"), ["user", "email"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn long_descriptions_are_one_trimmed_line() {
        let long = format!("  Finds\n\tthings. {}", "very ".repeat(100));
        let doc = json!({"openapi": "3.1.0", "paths": {"/x": {"get": {"operationId": "x", "summary": long, "responses": {}}}}});
        let draft = learn(Some(&doc), &[]).unwrap();
        let d = &action(&draft, "x").description;
        assert!(d.starts_with("Finds things. very very"));
        let first = d.split('…').next().unwrap();
        assert!(first.chars().count() < MAX_DESCRIPTION, "{d}");
        assert!(!d.contains('\n'));
        assert_eq!(one_line(" a  b ", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
