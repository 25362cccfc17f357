//! JSON output: keep keys, structure, short and identifier-like values; elide long
//! low-entropy strings; summarise long arrays. The result is still valid JSON.
//!
//! Identifier-like = no whitespace and Shannon entropy ≥ 3.0 bits/char (UUIDs, hashes,
//! paths); the whitespace pre-filter matters because prose has high per-character
//! entropy too (docs/context-pipeline.md, "Squash"). Arrays keep their first `json_array_keep`
//! elements, every later element that carries an error-like key or value, and one
//! string element `"[N items omitted]"` standing for the rest.

use serde_json::{Map, Value};

use super::config::SquashConfig;
use super::marker::chars_omitted_suffix;
use super::scan::ERROR_LINE;

/// Minimum entropy (bits per char) of a whitespace-free string kept as an identifier.
const IDENTIFIER_ENTROPY: f64 = 3.0;
/// Characters of an elided string that stay visible.
const ELIDED_HEAD_CHARS: usize = 40;

/// Shannon entropy of `s` in bits per character.
pub(crate) fn shannon_entropy(s: &str) -> f64 {
    let mut counts: std::collections::HashMap<char, u32> = std::collections::HashMap::new();
    let mut len = 0u32;
    for c in s.chars() {
        *counts.entry(c).or_insert(0) += 1;
        len += 1;
    }
    if len == 0 {
        return 0.0;
    }
    let len = f64::from(len);
    counts
        .values()
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}

fn is_identifier_like(s: &str) -> bool {
    !s.contains(char::is_whitespace) && shannon_entropy(s) >= IDENTIFIER_ENTROPY
}

fn is_error_like(value: &Value) -> bool {
    match value {
        Value::String(s) => ERROR_LINE.is_match(s),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| ERROR_LINE.is_match(k) || k == "errors" || is_error_like(v)),
        Value::Array(items) => items.iter().any(is_error_like),
        _ => false,
    }
}

fn squash_string(s: &mut String, config: &SquashConfig) {
    let chars = s.chars().count();
    if chars <= config.json_string_keep_chars || is_identifier_like(s) {
        return;
    }
    let head: String = s.chars().take(ELIDED_HEAD_CHARS).collect();
    *s = format!("{head}{}", chars_omitted_suffix(chars - ELIDED_HEAD_CHARS));
}

fn squash_value(value: &mut Value, config: &SquashConfig) {
    match value {
        Value::String(s) => squash_string(s, config),
        Value::Array(items) => {
            let keep = config.json_array_keep.max(1);
            if items.len() > keep + 1 {
                let rest = items.split_off(keep);
                let total_rest = rest.len();
                let mut kept_rest: Vec<Value> = rest.into_iter().filter(is_error_like).collect();
                let omitted = total_rest - kept_rest.len();
                items.append(&mut kept_rest);
                if omitted > 0 {
                    items.push(Value::String(format!("[{omitted} items omitted]")));
                }
            }
            for item in items.iter_mut() {
                squash_value(item, config);
            }
        }
        Value::Object(map) => squash_map(map, config),
        _ => {}
    }
}

fn squash_map(map: &mut Map<String, Value>, config: &SquashConfig) {
    for v in map.values_mut() {
        squash_value(v, config);
    }
}

/// Squashes `text` if it is JSON; `None` when it does not parse.
pub(crate) fn squash(text: &str, config: &SquashConfig) -> Option<String> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    squash_value(&mut value, config);
    let pretty = text.trim().contains('\n');
    if pretty {
        serde_json::to_string_pretty(&value).ok()
    } else {
        serde_json::to_string(&value).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entropy_separates_identifiers_from_repetition() {
        assert!(is_identifier_like("550e8400-e29b-41d4-a716-446655440000"));
        assert!(!is_identifier_like("aaaaaaaaaaaaaaaaaaaaaaaa"));
        assert!(!is_identifier_like("a sentence with words in it"));
    }

    #[test]
    fn long_prose_is_elided_and_identifiers_and_keys_survive() {
        let input = json!({
            "id": "550e8400-e29b-41d4-a716-446655440000-550e8400-e29b-41d4-a716-446655440000-aa",
            "description": "a very long description value that repeats ".repeat(20),
            "nested": {"ok": true, "n": 3}
        });
        let out = squash(&input.to_string(), &SquashConfig::default()).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["id"], input["id"]);
        assert_eq!(v["nested"], input["nested"]);
        let d = v["description"].as_str().unwrap();
        assert!(d.contains("chars omitted]"), "{d}");
    }

    #[test]
    fn arrays_keep_head_and_error_elements_and_count_the_rest() {
        let mut items: Vec<Value> = (0..50).map(|i| json!({"n": i, "status": "ok"})).collect();
        items[30] = json!({"n": 30, "error": "disk full"});
        let out = squash(&Value::Array(items).to_string(), &SquashConfig::default()).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        let arr = v.as_array().unwrap();
        assert_eq!(arr.len(), 5, "{out}");
        assert_eq!(arr[3]["error"], "disk full");
        assert_eq!(arr[4], json!("[46 items omitted]"));
    }
}
