//! The text form of the enums users name by a word (`read-only`, `PreToolUse`, …).

/// Implements `Display` (the variant's `as_str`) and `FromStr` (the variant of `ALL`
/// whose `as_str` is the text, else `$unknown` with the text) for a named enum.
///
/// The enum provides `const ALL: [Self; N]` and `fn as_str(self) -> &'static str`;
/// `$unknown` is a tuple struct around the `String` that named no variant.
#[macro_export]
macro_rules! named_enum_text {
    ($enum:ty, $unknown:ident) => {
        impl ::std::fmt::Display for $enum {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $enum {
            type Err = $unknown;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .into_iter()
                    .find(|named| named.as_str() == s)
                    .ok_or_else(|| $unknown(s.to_owned()))
            }
        }
    };
}
