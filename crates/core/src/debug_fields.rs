//! `Debug` for the structs that show only some of their fields.

/// Implements `Debug` for the struct `$ty`, showing only the fields named (in that
/// order) and ending with `..`: the others hold secrets, handles or types without
/// `Debug`, and a derive would show them or not compile.
#[macro_export]
macro_rules! debug_fields {
    ($ty:ident { $($field:ident),+ $(,)? }) => {
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($field), &self.$field))+
                    .finish_non_exhaustive()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    #[allow(dead_code)] // `secret` exists to be left out
    struct Handle {
        name: String,
        secret: String,
        size: u64,
    }

    debug_fields!(Handle { name, size });

    #[test]
    fn only_the_named_fields_are_shown_and_the_rest_is_marked() {
        let handle = Handle {
            name: "a".into(),
            secret: "KEY-123".into(),
            size: 3,
        };
        let text = format!("{handle:?}");
        assert_eq!(text, r#"Handle { name: "a", size: 3, .. }"#);
        assert!(!text.contains("KEY-123"));
    }
}
