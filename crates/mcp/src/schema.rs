//! A server's input schema, checked before a provider sees it.
//!
//! Providers reject a whole request when one tool's `parameters` is not an object schema,
//! so one bad tool would break every turn. A tool whose schema cannot be used is left out
//! (with a warning naming it); the server's other tools still work.

use serde_json::{Map, Value};

/// The schema to advertise for `input_schema`, or why the tool is left out.
///
/// Accepted: a JSON object whose `type` is `"object"` (added when missing), whose
/// `properties`, when present, is an object of objects, and whose `required`, when
/// present, is an array of strings.
pub fn normalize(input_schema: &Map<String, Value>) -> Result<Value, String> {
    let mut schema = input_schema.clone();
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::from("object"));
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(format!(
                "its input schema has type {other}, but tool arguments must be an object"
            ))
        }
    }
    match schema.get("properties") {
        None => {}
        Some(Value::Object(properties)) => {
            if let Some((name, _)) = properties.iter().find(|(_, p)| !p.is_object()) {
                return Err(format!(
                    "its input schema's property `{name}` is not a schema object"
                ));
            }
        }
        Some(_) => return Err("its input schema's `properties` is not an object".into()),
    }
    match schema.get("required") {
        None => {}
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {}
        Some(_) => return Err("its input schema's `required` is not a list of names".into()),
    }
    Ok(Value::Object(schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn object_schemas_pass_and_a_missing_type_is_added() {
        let schema =
            json!({"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]});
        assert_eq!(normalize(&object(schema.clone())).unwrap(), schema);
        assert_eq!(
            normalize(&object(json!({"properties": {}}))).unwrap(),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn unusable_schemas_say_why() {
        let cases = [
            (json!({"type": "array"}), "type"),
            (json!({"type": "object", "properties": [1]}), "properties"),
            (json!({"type": "object", "properties": {"a": 3}}), "`a`"),
            (json!({"type": "object", "required": "a"}), "required"),
        ];
        for (schema, word) in cases {
            let err = normalize(&object(schema.clone())).unwrap_err();
            assert!(err.contains(word), "{schema}: {err}");
        }
    }
}
