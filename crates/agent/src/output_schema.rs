//! `--output-schema FILE`: the job's final answer must be JSON that validates against a
//! JSON Schema (draft 2020-12 unless the schema names another with `$schema`).
//!
//! [`OutputSchema`] compiles the schema once (with `boon`; a bad schema is a usage error
//! before anything runs), says what to ask the model for ([`OutputSchema::instructions`],
//! added to the prompt; [`OutputSchema::request`], the native form each protocol gets, see
//! pith-providers `wire::structured`), and validates an answer
//! ([`OutputSchema::validate`]). When the answer does not validate the conversation asks
//! the model once to correct itself, quoting the errors ([`OutputSchema::correction`]),
//! with the answer forced where the protocol can force it; a second miss ends the job
//! with the "schema not met" exit code.

use std::path::Path;
use std::sync::Arc;

use pith_providers::wire::StructuredOutput;
use serde_json::Value;

/// Most validation errors quoted back to the model or the user.
pub const MAX_QUOTED_ERRORS: usize = 20;

/// Keywords OpenAI's strict structured outputs do not take.
const NOT_STRICT: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// A compiled output schema; see the module docs.
pub struct OutputSchema {
    schema: Arc<Value>,
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
    strict: bool,
}

pith_core::debug_fields!(OutputSchema { schema, strict });

/// Why an answer does not match: each error with where it is in the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaMismatch {
    /// One line per error (at most [`MAX_QUOTED_ERRORS`]).
    pub errors: Vec<String>,
}

impl std::fmt::Display for SchemaMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.errors.join("; "))
    }
}

impl OutputSchema {
    /// Reads and compiles the schema in `path`.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the output schema {}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the output schema {} is not JSON: {e}", path.display()))?;
        Self::from_value(value)
            .map_err(|e| format!("the output schema {} is not usable: {e}", path.display()))
    }

    /// Compiles `schema`.
    pub fn from_value(schema: Value) -> Result<Self, String> {
        if !(schema.is_object() || schema.is_boolean()) {
            return Err("a JSON Schema is an object (or true / false)".into());
        }
        const URL: &str = "urn:pith:output-schema";
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler
            .add_resource(URL, schema.clone())
            .map_err(|e| e.to_string())?;
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(URL, &mut schemas)
            .map_err(|e| format!("{e:#}"))?;
        let strict = strict_compatible(&schema);
        Ok(Self {
            schema: Arc::new(schema),
            schemas,
            index,
            strict,
        })
    }

    /// The schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// What a request asks for: the schema in guide mode, or forced (the correction).
    pub fn request(&self, force: bool) -> StructuredOutput {
        StructuredOutput::new(Arc::clone(&self.schema), self.strict).forced(force)
    }

    /// The instructions added after the user's prompt.
    pub fn instructions(&self) -> String {
        format!(
            "\n\n<output_schema>\nWhen you are done, give your final answer as a JSON value \
             that validates against this JSON Schema, and nothing else: no prose, no code \
             fence.\n{}\n</output_schema>",
            self.schema
        )
    }

    /// The message asking the model to correct an answer that did not validate.
    pub fn correction(&self, mismatch: &SchemaMismatch) -> String {
        let mut text = String::from(
            "Your final answer does not match the required output schema. Validation errors:\n",
        );
        for error in &mismatch.errors {
            text.push_str("- ");
            text.push_str(error);
            text.push('\n');
        }
        text.push_str(
            "Answer again with only the corrected JSON value, matching the schema given with \
             the task: no prose, no code fence.",
        );
        text
    }

    /// The JSON value of `answer` when it validates: the answer itself, or the one JSON
    /// value inside a Markdown code fence.
    pub fn validate(&self, answer: &str) -> Result<Value, SchemaMismatch> {
        let value = parse_answer(answer).map_err(|error| SchemaMismatch {
            errors: vec![error],
        })?;
        match self.schemas.validate(&value, self.index) {
            Ok(()) => Ok(value),
            Err(error) => {
                let mut errors = Vec::new();
                collect_leaves(&error, &mut errors);
                if errors.is_empty() {
                    errors.push(error.to_string());
                }
                errors.truncate(MAX_QUOTED_ERRORS);
                Err(SchemaMismatch { errors })
            }
        }
    }
}

/// The JSON of an answer: all of it, else the inside of its one code fence.
fn parse_answer(answer: &str) -> Result<Value, String> {
    let trimmed = answer.trim();
    if trimmed.is_empty() {
        return Err("the answer is empty, not JSON".into());
    }
    let first = serde_json::from_str::<Value>(trimmed);
    let error = match first {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    if let Some(inner) = fenced(trimmed) {
        if let Ok(value) = serde_json::from_str::<Value>(inner.trim()) {
            return Ok(value);
        }
    }
    let start: String = trimmed.chars().take(60).collect();
    Err(format!(
        "the answer is not JSON ({error}); it starts with {start:?}"
    ))
}

/// The body of a Markdown code fence that is the whole answer.
fn fenced(text: &str) -> Option<&str> {
    let body = text.strip_prefix("```")?.strip_suffix("```")?;
    let newline = body.find('\n')?;
    Some(&body[newline + 1..])
}

fn collect_leaves(error: &boon::ValidationError<'_, '_>, out: &mut Vec<String>) {
    if error.causes.is_empty() {
        let at = error.instance_location.to_string();
        let at = if at.is_empty() {
            "(root)".to_owned()
        } else {
            at
        };
        out.push(format!("at {at}: {}", error.kind));
    } else {
        for cause in &error.causes {
            collect_leaves(cause, out);
        }
    }
}

/// Whether OpenAI's strict mode takes `schema`: every object closed
/// (`additionalProperties: false`) with all its properties required, and none of the
/// keywords strict mode refuses.
pub fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if NOT_STRICT.iter().any(|k| map.contains_key(*k)) {
                return false;
            }
            let is_object = map.get("type").and_then(Value::as_str) == Some("object")
                || map.contains_key("properties");
            if is_object {
                if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                    return false;
                }
                let properties = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().collect::<Vec<_>>())
                    .unwrap_or_default();
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if properties.iter().any(|p| !required.contains(&p.as_str())) {
                    return false;
                }
            }
            map.iter()
                .filter(|(key, _)| {
                    !matches!(key.as_str(), "enum" | "const" | "default" | "examples")
                })
                .all(|(_, value)| strict_compatible(value))
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::from_value(json!({
            "type": "object",
            "properties": {
                "verdict": {"enum": ["pass", "fail"]},
                "failures": {"type": "integer", "minimum": 0}
            },
            "required": ["verdict", "failures"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_matching_answer_validates_and_a_fenced_one_too() {
        let schema = schema();
        let value = schema
            .validate(r#"{"verdict": "pass", "failures": 0}"#)
            .unwrap();
        assert_eq!(value["verdict"], "pass");
        let fenced = "```json\n{\"verdict\": \"fail\", \"failures\": 2}\n```";
        assert_eq!(schema.validate(fenced).unwrap()["failures"], 2);
    }

    #[test]
    fn a_mismatch_names_each_error_with_its_place() {
        let schema = schema();
        let mismatch = schema
            .validate(r#"{"verdict": "maybe", "failures": -1, "extra": 1}"#)
            .unwrap_err();
        assert!(mismatch.errors.len() >= 3, "{mismatch:?}");
        assert!(mismatch.errors.iter().any(|e| e.contains("/verdict")));
        assert!(mismatch.errors.iter().any(|e| e.contains("/failures")));
        let prose = schema.validate("All tests pass.").unwrap_err();
        assert!(prose.errors[0].contains("not JSON"), "{prose}");
        assert!(schema.validate("   ").unwrap_err().errors[0].contains("empty"));
        let correction = schema.correction(&mismatch);
        assert!(correction.contains("/verdict"), "{correction}");
    }

    #[test]
    fn bad_schemas_are_refused_at_start() {
        assert!(OutputSchema::from_value(json!([1])).is_err());
        assert!(OutputSchema::from_value(json!({"type": 12})).is_err());
        assert!(OutputSchema::from_value(json!({"$ref": "https://example.com/s.json"})).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, "{not json").unwrap();
        let error = OutputSchema::load(&path).unwrap_err();
        assert!(error.contains("not JSON"), "{error}");
        assert!(OutputSchema::load(&dir.path().join("missing.json"))
            .unwrap_err()
            .contains("cannot read"));
    }

    #[test]
    fn strict_mode_only_for_closed_fully_required_objects() {
        assert!(schema().strict);
        assert!(schema().request(false).strict);
        assert!(schema().request(true).force);
        assert!(!strict_compatible(
            &json!({"type": "object", "properties": {"a": {}}})
        ));
        assert!(!strict_compatible(&json!({
            "type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"],
            "additionalProperties": false
        })));
        assert!(!strict_compatible(&json!({"allOf": [{"type": "string"}]})));
        assert!(strict_compatible(
            &json!({"type": "array", "items": {"type": "string"}})
        ));
    }
}
