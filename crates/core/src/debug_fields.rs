//! `Debug` for the structs that show only some of their fields.

/// Implements `Debug` for the struct `$ty`, showing only what is named (in that order)
/// and ending with `..`: the other fields hold secrets, handles or types without
/// `Debug`, and a derive would show them or not compile.
///
/// `debug_fields!(Ty { a, b })` shows fields `a` and `b`; `debug_fields!(Ty |this| { a:
/// this.x.len(), b: this.y })` shows values computed from the struct, bound to `this`.
#[macro_export]
macro_rules! debug_fields {
    ($ty:ident |$this:ident| { $($name:ident: $value:expr),+ $(,)? }) => {
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let $this = self;
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($name), &$value))+
                    .finish_non_exhaustive()
            }
        }
    };
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

    struct Computed {
        items: Vec<u8>,
        key: Option<String>,
    }

    debug_fields!(Computed |this| {
        items: this.items.len(),
        has_key: this.key.is_some(),
    });

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

    #[test]
    fn computed_values_are_shown_under_their_names() {
        let computed = Computed {
            items: vec![1, 2, 3],
            key: Some("KEY-123".into()),
        };
        let text = format!("{computed:?}");
        assert_eq!(text, "Computed { items: 3, has_key: true, .. }");
    }
}
