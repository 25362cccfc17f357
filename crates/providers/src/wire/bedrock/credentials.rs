//! Where a Bedrock request's AWS credentials (and, failing the environment, its region)
//! come from: a small trait, so tests sign with fixed credentials and never touch the
//! environment, the user's `~/.aws` or the instance metadata service.
//!
//! [`AwsChain`] is the real one: `aws-config`'s standard chain — environment variables,
//! the shared config and credentials files (profiles, SSO, `credential_process`), web
//! identity, ECS and EC2 instance metadata — loaded once, on the first request. Credentials
//! are cached until five minutes before they expire. Nothing here logs or stores them:
//! `Credentials`' own `Debug` redacts the secret.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_credential_types::provider::ProvideCredentials;
use aws_credential_types::Credentials;
use tokio::sync::OnceCell;

use crate::wire::error::ProviderError;

/// Credentials are renewed this long before they expire.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// A source of AWS credentials for signing.
#[async_trait]
pub trait CredentialSource: Send + Sync + std::fmt::Debug {
    /// Credentials valid for a request signed now.
    async fn credentials(&self) -> Result<Credentials, ProviderError>;

    /// The region the source's configuration names (a profile's `region`), if any; used
    /// only when `AWS_REGION` / `AWS_DEFAULT_REGION` and the config name none.
    async fn region(&self) -> Option<String> {
        None
    }
}

/// Fixed credentials (tests, and callers that resolved them elsewhere).
#[derive(Debug, Clone)]
pub struct FixedCredentials {
    credentials: Credentials,
    region: Option<String>,
}

impl FixedCredentials {
    /// `access_key_id` / `secret_access_key` (and a session token for temporary ones).
    pub fn new(access_key_id: &str, secret_access_key: &str, session_token: Option<&str>) -> Self {
        Self {
            credentials: Credentials::new(
                access_key_id,
                secret_access_key,
                session_token.map(str::to_owned),
                None,
                "pith-fixed",
            ),
            region: None,
        }
    }

    /// The same credentials, naming `region` as a profile would.
    pub fn with_region(mut self, region: &str) -> Self {
        self.region = Some(region.to_owned());
        self
    }
}

#[async_trait]
impl CredentialSource for FixedCredentials {
    async fn credentials(&self) -> Result<Credentials, ProviderError> {
        Ok(self.credentials.clone())
    }

    async fn region(&self) -> Option<String> {
        self.region.clone()
    }
}

/// The standard AWS credential chain of `aws-config`, loaded lazily. Its own HTTP client
/// (for SSO, STS and instance metadata) is rustls with ring, like pith's.
#[derive(Debug, Default)]
pub struct AwsChain {
    profile: Option<String>,
    config: OnceCell<SdkConfig>,
    cached: Mutex<Option<Credentials>>,
}

impl AwsChain {
    /// The chain, with `profile` instead of `AWS_PROFILE` / `default` when given.
    pub fn new(profile: Option<&str>) -> Self {
        Self {
            profile: profile.map(str::to_owned),
            ..Self::default()
        }
    }

    async fn config(&self) -> &SdkConfig {
        self.config
            .get_or_init(|| async {
                use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
                let http = aws_smithy_http_client::Builder::new()
                    .tls_provider(Provider::Rustls(CryptoMode::Ring))
                    .build_https();
                let mut loader =
                    aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(http);
                if let Some(profile) = &self.profile {
                    loader = loader.profile_name(profile);
                }
                loader.load().await
            })
            .await
    }

    fn fresh_cached(&self) -> Option<Credentials> {
        let cached = self.cached.lock().ok()?.clone()?;
        match cached.expiry() {
            Some(expiry) if expiry <= SystemTime::now() + REFRESH_MARGIN => None,
            _ => Some(cached),
        }
    }
}

#[async_trait]
impl CredentialSource for AwsChain {
    async fn credentials(&self) -> Result<Credentials, ProviderError> {
        if let Some(credentials) = self.fresh_cached() {
            return Ok(credentials);
        }
        let provider = self.config().await.credentials_provider().ok_or_else(|| {
            ProviderError::InvalidRequest("no AWS credential provider is configured".to_owned())
        })?;
        let credentials = provider.provide_credentials().await.map_err(|err| {
            ProviderError::InvalidRequest(format!(
                "no AWS credentials: {err} (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
                 or AWS_PROFILE for a profile or SSO session of ~/.aws/config)"
            ))
        })?;
        if let Ok(mut cached) = self.cached.lock() {
            *cached = Some(credentials.clone());
        }
        Ok(credentials)
    }

    async fn region(&self) -> Option<String> {
        self.config()
            .await
            .region()
            .map(|region| region.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fixed_credentials_are_what_they_say_and_never_printed() {
        let fixed = FixedCredentials::new("AKIDTEST", "secret-not-to-print", Some("tok"))
            .with_region("eu-west-1");
        let credentials = fixed.credentials().await.unwrap();
        assert_eq!(credentials.access_key_id(), "AKIDTEST");
        assert_eq!(credentials.session_token(), Some("tok"));
        assert_eq!(fixed.region().await.as_deref(), Some("eu-west-1"));
        let printed = format!("{fixed:?}");
        assert!(!printed.contains("secret-not-to-print"), "{printed}");
    }

    #[test]
    fn cached_credentials_are_renewed_before_they_expire() {
        let chain = AwsChain::new(None);
        let soon = SystemTime::now() + Duration::from_secs(60);
        *chain.cached.lock().unwrap() = Some(Credentials::new("A", "S", None, Some(soon), "test"));
        assert!(chain.fresh_cached().is_none());
        let later = SystemTime::now() + Duration::from_secs(3600);
        *chain.cached.lock().unwrap() = Some(Credentials::new("A", "S", None, Some(later), "test"));
        assert!(chain.fresh_cached().is_some());
    }
}
