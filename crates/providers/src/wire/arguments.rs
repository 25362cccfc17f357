//! A tool call's arguments as the protocols that require a JSON object take them
//! (Anthropic `input`, Gemini `args`, Bedrock `input`): the object itself, or any other
//! value wrapped as `{"raw_arguments": …}` so that the request stays valid.

use serde::Serialize;
use serde_json::Value;

/// Borrowed call arguments, serialised as an object.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum ObjectArguments<'a> {
    /// The arguments were an object: sent as they are.
    Object(&'a Value),
    /// Anything else (a model's malformed call): wrapped.
    Raw {
        /// The arguments as the call had them.
        raw_arguments: &'a Value,
    },
}

impl<'a> ObjectArguments<'a> {
    /// `arguments` as an object.
    pub(crate) fn of(arguments: &'a Value) -> Self {
        match arguments {
            Value::Object(_) => Self::Object(arguments),
            other => Self::Raw {
                raw_arguments: other,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_pass_and_anything_else_is_wrapped() {
        let object = json!({"path": "a.rs"});
        assert_eq!(json!(ObjectArguments::of(&object)), object);
        let text = json!("not an object");
        assert_eq!(
            json!(ObjectArguments::of(&text)),
            json!({"raw_arguments": "not an object"})
        );
    }
}
