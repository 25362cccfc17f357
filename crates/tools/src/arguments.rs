//! A tool call's arguments, parsed into the tool's argument struct.

use pith_core::ToolError;
use serde::de::DeserializeOwned;

/// Parses a call's arguments into the tool's argument struct; a mismatch is an
/// [`ToolError::InvalidArguments`] naming the problem.
pub(crate) fn parse_args<T: DeserializeOwned>(
    arguments: serde_json::Value,
) -> Result<T, ToolError> {
    if !arguments.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "arguments must be a JSON object, got {}",
            match arguments {
                serde_json::Value::String(_) => "a string (was the JSON malformed?)",
                serde_json::Value::Null => "null",
                serde_json::Value::Array(_) => "an array",
                _ => "a scalar",
            }
        )));
    }
    serde_json::from_value(arguments).map_err(|err| ToolError::InvalidArguments(err.to_string()))
}

/// The JSON Schema of a tool's arguments: an object of these `properties`, of which the
/// `required` ones must be given, and no other.
pub(crate) fn object_schema(properties: serde_json::Value, required: &[&str]) -> serde_json::Value {
    let mut schema = serde_json::json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = serde_json::json!(required);
    }
    schema["additionalProperties"] = serde_json::Value::Bool(false);
    schema
}
