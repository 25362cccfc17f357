//! Builder methods that each set one field of a configuration and return it, written as a
//! list (`with_x(x: T) -> Self`) instead of one hand-written method a field.

/// Defines `pub fn NAME(mut self, FIELD: T) -> Self` setting `self.FIELD`, for each
/// `NAME => FIELD: T;` (the field takes `Some(value)` when written `FIELD: Some(T)`), each
/// with its doc comment.
macro_rules! setters {
    () => {};
    ($(#[$doc:meta])* $name:ident => $field:ident: Some($ty:ty); $($rest:tt)*) => {
        $(#[$doc])*
        pub fn $name(mut self, $field: $ty) -> Self {
            self.$field = Some($field);
            self
        }
        setters!($($rest)*);
    };
    ($(#[$doc:meta])* $name:ident => $field:ident: $ty:ty; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn $name(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
        setters!($($rest)*);
    };
}

pub(crate) use setters;
