//! EKS bearer tokens made in process, for Argo CD's `awsAuthConfig`:
//! what Argo CD's `argocd-k8s-auth aws` (argoproj/argo-cd
//! `cmd/argocd-k8s-auth/commands/aws.go`) and `aws-iam-authenticator`'s
//! `GetWithSTS` (kubernetes-sigs/aws-iam-authenticator
//! `pkg/token/token.go`) print, without running either.
//!
//! A token is `k8s-aws-v1.` followed by the unpadded base64url of a
//! presigned STS `GetCallerIdentity` URL whose signature covers the
//! header `x-k8s-aws-id: <clusterName>`. The EKS API server sends that
//! request to STS with the header and maps the identity STS answers to a
//! Kubernetes user; STS honours the signature for 15 minutes after
//! `X-Amz-Date`, so a token is reused for 14 (upstream's one-minute
//! cushion), or until one minute before the credentials it was signed
//! with expire, whichever is sooner.
//!
//! Credentials come from the AWS SDK's default chain (environment, web
//! identity for IRSA, the shared files, ECS and EC2 instance metadata),
//! from the named `profile` when set, then through `sts:AssumeRole` of
//! `roleARN` when set, as upstream does.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use base64::Engine;
use futures::future::BoxFuture;

/// The header whose value (the cluster name) the token's signature covers.
pub(crate) const CLUSTER_ID_HEADER: &str = "x-k8s-aws-id";
/// What every token starts with.
pub(crate) const TOKEN_PREFIX: &str = "k8s-aws-v1.";
/// STS honours a presigned `GetCallerIdentity` this long after signing.
const PRESIGNED_URL_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// Upstream's cushion before that.
const CUSHION: Duration = Duration::from_secs(60);
/// `X-Amz-Expires`: ignored by STS, kept at 60 s as upstream does
/// (older authenticators refuse more).
const PRESIGN_EXPIRES: Duration = Duration::from_secs(60);
/// Region of the STS endpoint when the AWS configuration names none.
const DEFAULT_REGION: &str = "us-east-1";

/// Argo CD's `AWSAuthConfig` (`pkg/apis/application/v1alpha1/types.go`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct EksAuth {
    /// The EKS cluster's name, signed as [`CLUSTER_ID_HEADER`].
    pub(crate) cluster_name: String,
    /// Role to assume first (`roleARN`), if any.
    pub(crate) role_arn: Option<String>,
    /// Profile of the shared AWS files (`profile`), if any.
    pub(crate) profile: Option<String>,
}

/// The STS host of `region` (the regional endpoint upstream's SDK
/// presigns for; China's regions are in their own partition).
pub(crate) fn sts_host(region: &str) -> String {
    if region.starts_with("cn-") {
        format!("sts.{region}.amazonaws.com.cn")
    } else {
        format!("sts.{region}.amazonaws.com")
    }
}

/// A token for `cluster_name` signed with `credentials` at `now`, for
/// the STS endpoint of `region`. Errors: the signer refused the inputs
/// (a region or cluster name that cannot go into a URL or header).
pub(crate) fn presigned_token(
    credentials: &Credentials,
    region: &str,
    cluster_name: &str,
    now: SystemTime,
) -> Result<String, String> {
    use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings};

    let url = format!(
        "https://{}/?Action=GetCallerIdentity&Version=2011-06-15",
        sts_host(region)
    );
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(PRESIGN_EXPIRES);
    let identity = credentials.clone().into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("sts")
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| format!("cannot sign for STS: {e}"))?
        .into();
    let signable = SignableRequest::new(
        "GET",
        url.as_str(),
        std::iter::once((CLUSTER_ID_HEADER, cluster_name)),
        SignableBody::Bytes(&[]),
    )
    .map_err(|e| format!("cannot sign {url}: {e}"))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| format!("cannot sign for STS: {e}"))?
        .into_parts();
    let mut request = http::Request::get(url.as_str())
        .body(())
        .map_err(|e| format!("cannot sign {url}: {e}"))?;
    instructions.apply_to_request_http1x(&mut request);
    let presigned = request.uri().to_string();
    Ok(format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(presigned)
    ))
}

/// When a token signed at `signed` with credentials expiring at `expiry`
/// should be replaced.
fn renew_at(signed: SystemTime, expiry: Option<SystemTime>) -> SystemTime {
    let by_url = signed + PRESIGNED_URL_LIFETIME - CUSHION;
    match expiry.and_then(|e| e.checked_sub(CUSHION)) {
        Some(by_credentials) if by_credentials < by_url => by_credentials,
        _ => by_url,
    }
}

/// No token could be made (no credentials, a role not assumed): the
/// member's requests fail with this, and its probe reports `AuthFailed`.
#[derive(Debug)]
pub(crate) struct EksTokenError(pub(crate) String);

impl std::fmt::Display for EksTokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EksTokenError {}

/// Where one member's tokens come from: its credentials and the token
/// in use.
pub(crate) struct EksTokens {
    auth: EksAuth,
    state: tokio::sync::Mutex<TokenState>,
}

#[derive(Default)]
struct TokenState {
    /// Credentials provider and region; loaded again after a failure
    /// (the SDK's providers report a failed initialisation only once,
    /// and a fixed file or role should be picked up).
    source: Option<(SharedCredentialsProvider, String)>,
    /// The token in use and when to renew it.
    current: Option<(String, SystemTime)>,
}

impl EksTokens {
    pub(crate) fn new(auth: EksAuth) -> EksTokens {
        EksTokens {
            auth,
            state: tokio::sync::Mutex::new(TokenState::default()),
        }
    }

    /// The credentials provider and region, from the AWS configuration
    /// chain (the profile when set), behind `sts:AssumeRole` when a role
    /// is set; None when the configuration has no provider at all.
    async fn load_source(&self) -> Option<(SharedCredentialsProvider, String)> {
        let http = aws_smithy_http_client::Builder::new()
            .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
                aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
            ))
            .build_https();
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
        if let Some(profile) = &self.auth.profile {
            loader = loader.profile_name(profile);
        }
        let mut sdk = loader.load().await;
        let region = sdk
            .region()
            .map_or_else(|| DEFAULT_REGION.to_owned(), ToString::to_string);
        if sdk.region().is_none() {
            // STS needs a region for role assumption too.
            sdk = sdk
                .into_builder()
                .region(aws_config::Region::new(DEFAULT_REGION))
                .build();
        }
        let provider = match &self.auth.role_arn {
            Some(role) => SharedCredentialsProvider::new(
                aws_config::sts::AssumeRoleProvider::builder(role.clone())
                    .session_name("fedns")
                    .configure(&sdk)
                    .build()
                    .await,
            ),
            None => sdk.credentials_provider()?,
        };
        Some((provider, region))
    }

    /// The token to send now: the one in use while it is fresh, else a
    /// new one. Errors: no AWS credentials (the chain's own message), or
    /// the role could not be assumed.
    pub(crate) async fn token(&self) -> Result<String, String> {
        let mut state = self.state.lock().await;
        let now = SystemTime::now();
        if let Some((token, renew)) = state.current.as_ref() {
            if now < *renew {
                return Ok(token.clone());
            }
        }
        let fail = |what: String| format!("awsAuthConfig of EKS cluster {:?}: {what}", self.auth.cluster_name);
        if state.source.is_none() {
            state.source = self.load_source().await;
        }
        let (provider, region) = state
            .source
            .clone()
            .ok_or_else(|| fail("the AWS configuration has no credentials provider".into()))?;
        let credentials = match provider.provide_credentials().await {
            Ok(credentials) => credentials,
            Err(e) => {
                state.source = None;
                let what = match &self.auth.role_arn {
                    Some(role) => format!("cannot assume role {role}"),
                    None => "no AWS credentials".to_owned(),
                };
                return Err(fail(format!(
                    "{what}: {}",
                    aws_smithy_types::error::display::DisplayErrorContext(&e)
                )));
            }
        };
        let token = presigned_token(&credentials, &region, &self.auth.cluster_name, now)?;
        state.current = Some((token.clone(), renew_at(now, credentials.expiry())));
        Ok(token)
    }
}

/// Puts `Authorization: Bearer <token>` on each request of a member's
/// client (a [`tower::filter::AsyncPredicate`]); a request is failed
/// with the reason when no token can be made.
#[derive(Clone)]
pub(crate) struct EksAuthorization(pub(crate) Arc<EksTokens>);

impl<B: Send + 'static> tower::filter::AsyncPredicate<http::Request<B>> for EksAuthorization {
    type Future = BoxFuture<'static, Result<http::Request<B>, tower::BoxError>>;
    type Request = http::Request<B>;

    fn check(&mut self, mut request: http::Request<B>) -> Self::Future {
        let tokens = self.0.clone();
        Box::pin(async move {
            let token = tokens.token().await.map_err(EksTokenError)?;
            let mut value = http::HeaderValue::from_str(&format!("Bearer {token}"))?;
            value.set_sensitive(true);
            request.headers_mut().insert(http::header::AUTHORIZATION, value);
            Ok(request)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(session: Option<&str>) -> Credentials {
        Credentials::new("AKIDEXAMPLE", "secret", session.map(str::to_owned), None, "test")
    }

    fn decoded(token: &str) -> String {
        let b64 = token.strip_prefix(TOKEN_PREFIX).expect("prefix");
        String::from_utf8(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(b64)
                .expect("base64url"),
        )
        .unwrap()
    }

    #[test]
    fn a_token_is_a_presigned_get_caller_identity_covering_the_cluster_header() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        let token = presigned_token(&credentials(Some("session")), "eu-west-1", "prod", now).unwrap();
        let url = decoded(&token);
        assert!(
            url.starts_with("https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&"),
            "{url}"
        );
        for part in [
            "X-Amz-Algorithm=AWS4-HMAC-SHA256",
            "X-Amz-Credential=AKIDEXAMPLE%2F20260921%2Feu-west-1%2Fsts%2Faws4_request",
            "X-Amz-Date=20260921T",
            "X-Amz-Expires=60",
            "X-Amz-SignedHeaders=host%3Bx-k8s-aws-id",
            "X-Amz-Security-Token=session",
            "X-Amz-Signature=",
        ] {
            assert!(url.contains(part), "{part} missing from {url}");
        }
        // The same inputs sign the same; another cluster name does not.
        assert_eq!(
            token,
            presigned_token(&credentials(Some("session")), "eu-west-1", "prod", now).unwrap()
        );
        assert_ne!(
            token,
            presigned_token(&credentials(Some("session")), "eu-west-1", "staging", now).unwrap()
        );
        assert!(
            decoded(&presigned_token(&credentials(None), "cn-north-1", "x", now).unwrap())
                .starts_with("https://sts.cn-north-1.amazonaws.com.cn/")
        );
    }

    /// What fedns makes passes the stand-in EKS authenticator (which signs
    /// the request again as STS would); the integration tests go through
    /// a member's client.
    #[tokio::test]
    async fn the_stand_in_eks_api_server_accepts_the_token() {
        let authenticator = fedns_standins::EksAuthenticator {
            cluster_id: "prod".into(),
            keys: vec![fedns_standins::AwsKey {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "secret".into(),
                arn: "arn:aws:iam::123456789012:user/fedns".into(),
            }],
            ..fedns_standins::EksAuthenticator::default()
        };
        let token = presigned_token(&credentials(None), "eu-west-1", "prod", SystemTime::now()).unwrap();
        assert_eq!(
            authenticator.verify(&token).await.unwrap(),
            "arn:aws:iam::123456789012:user/fedns"
        );
    }

    #[test]
    fn a_token_is_renewed_a_minute_before_the_url_or_the_credentials_expire() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(renew_at(t, None), t + Duration::from_secs(14 * 60));
        assert_eq!(
            renew_at(t, Some(t + Duration::from_secs(3600))),
            t + Duration::from_secs(14 * 60)
        );
        assert_eq!(
            renew_at(t, Some(t + Duration::from_secs(300))),
            t + Duration::from_secs(240)
        );
    }
}
