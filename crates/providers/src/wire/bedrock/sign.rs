//! AWS Signature Version 4 for a Bedrock request, computed by the official `aws-sigv4`.
//!
//! pith signs with the SDK's defaults, as the AWS SDK's own Bedrock client does: the
//! signature goes in headers, the path is percent-encoded twice in the canonical request
//! (a model id's `:` travels as `%3A`, and is signed as `%253A`), the payload hash is of
//! the exact body sent, no `x-amz-content-sha256` header, and a session token is signed
//! (`x-amz-security-token`). The signed headers are `host` (from the URL), `x-amz-date`,
//! the session token when there is one, and the headers the caller names.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

use crate::wire::error::ProviderError;

/// The signing name of the Bedrock runtime API.
pub const SERVICE: &str = "bedrock";

/// A request about to be signed.
#[derive(Debug, Clone, Copy)]
pub struct Unsigned<'a> {
    /// `GET`, `POST`, …
    pub method: &'a str,
    /// The full URL, already percent-encoded.
    pub url: &'a str,
    /// Headers to sign besides `host` (which comes from the URL).
    pub headers: &'a [(&'a str, &'a str)],
    /// The exact body.
    pub body: &'a [u8],
}

/// Where and when a signature is valid.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The AWS region (`us-east-1`).
    pub region: &'a str,
    /// The signing name of the service (`bedrock`).
    pub service: &'a str,
    /// The signing time.
    pub time: SystemTime,
}

/// The headers that carry the signature of `request` — `authorization`, `x-amz-date`
/// and, for temporary credentials, `x-amz-security-token` — to add to the request as they
/// are. They hold no secret key, but the session token is a credential: never log them.
pub fn signature_headers(
    request: &Unsigned<'_>,
    credentials: &Credentials,
    scope: &Scope<'_>,
) -> Result<Vec<(&'static str, String)>, ProviderError> {
    let identity = Identity::from(credentials.clone());
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(scope.region)
        .name(scope.service)
        .time(scope.time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| ProviderError::InvalidRequest(format!("cannot sign the request: {err}")))?
        .into();
    let signable = SignableRequest::new(
        request.method,
        request.url,
        request.headers.iter().copied(),
        SignableBody::Bytes(request.body),
    )
    .map_err(|err| {
        ProviderError::InvalidRequest(format!("cannot sign a request to {}: {err}", request.url))
    })?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|err| {
            ProviderError::InvalidRequest(format!(
                "cannot sign a request to {}: {err}",
                request.url
            ))
        })?
        .into_parts();
    let (headers, _query) = instructions.into_parts();
    Ok(headers
        .into_iter()
        .map(|header| (header.name(), header.value().to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The example credentials of the AWS SigV4 test suite.
    fn example_credentials(token: Option<&str>) -> Credentials {
        Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            token.map(str::to_owned),
            None,
            "test-vectors",
        )
    }

    /// 2015-08-30T12:36:00Z, the suite's signing time.
    fn suite_time() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160)
    }

    fn suite_scope() -> Scope<'static> {
        Scope {
            region: "us-east-1",
            service: "service",
            time: suite_time(),
        }
    }

    fn header<'a>(headers: &'a [(&'static str, String)], name: &str) -> &'a str {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} in {headers:?}"))
    }

    /// One vector of the official aws-sig-v4-test-suite: `request.txt` as method, URL and
    /// headers; `header-signed-request.txt`'s `Authorization` as the expectation.
    fn assert_vector(
        method: &str,
        url: &str,
        token: Option<&str>,
        signed_headers: &str,
        signature: &str,
    ) {
        let request = Unsigned {
            method,
            url,
            headers: &[],
            body: b"",
        };
        let headers =
            signature_headers(&request, &example_credentials(token), &suite_scope()).unwrap();
        assert_eq!(
            header(&headers, "authorization"),
            format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders={signed_headers}, Signature={signature}"
            ),
            "{method} {url}"
        );
        assert_eq!(header(&headers, "x-amz-date"), "20150830T123600Z");
    }

    #[test]
    fn get_vanilla() {
        assert_vector(
            "GET",
            "https://example.amazonaws.com/",
            None,
            "host;x-amz-date",
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        );
    }

    #[test]
    fn post_vanilla() {
        assert_vector(
            "POST",
            "https://example.amazonaws.com/",
            None,
            "host;x-amz-date",
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        );
    }

    #[test]
    fn get_vanilla_query_order_key_case() {
        assert_vector(
            "GET",
            "https://example.amazonaws.com/?Param2=value2&Param1=value1",
            None,
            "host;x-amz-date",
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        );
    }

    #[test]
    fn get_vanilla_with_session_token() {
        let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
        assert_vector(
            "GET",
            "https://example.amazonaws.com/",
            Some(token),
            "host;x-amz-date;x-amz-security-token",
            "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
        );
    }

    /// A ConverseStream request as the adapter signs it, against a signature computed
    /// independently of aws-sigv4 (a plain SigV4 implementation with HMAC-SHA256 from
    /// Python's standard library) over this canonical request:
    ///
    /// ```text
    /// POST
    /// /model/anthropic.claude-sonnet-4-5-20250929-v1%253A0/converse-stream
    ///
    /// content-type:application/json
    /// host:bedrock-runtime.us-west-2.amazonaws.com
    /// x-amz-date:20260101T000000Z
    ///
    /// content-type;host;x-amz-date
    /// sha256({"messages":[{"role":"user","content":[{"text":"hi"}]}]})
    /// ```
    ///
    /// It proves the model id's `:` is signed double-encoded, as Bedrock verifies it.
    #[test]
    fn a_converse_request_is_signed_as_bedrock_verifies_it() {
        let body = br#"{"messages":[{"role":"user","content":[{"text":"hi"}]}]}"#;
        let request = Unsigned {
            method: "POST",
            url: "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream",
            headers: &[("content-type", "application/json")],
            body,
        };
        let scope = Scope {
            region: "us-west-2",
            service: SERVICE,
            // 2026-01-01T00:00:00Z
            time: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
        };
        let headers = signature_headers(&request, &example_credentials(None), &scope).unwrap();
        assert_eq!(
            header(&headers, "authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-west-2/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=e1e7acf806295fa45a6ec9c9782676a47aec1e5292eb5fdfddc75d8aebd96fa6"
        );
        assert_eq!(headers.len(), 2, "no session token: {headers:?}");
        let with_token = signature_headers(
            &request,
            &example_credentials(Some("session-token")),
            &scope,
        )
        .unwrap();
        assert_eq!(header(&with_token, "x-amz-security-token"), "session-token");
        assert!(header(&with_token, "authorization")
            .contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"));
    }
}
