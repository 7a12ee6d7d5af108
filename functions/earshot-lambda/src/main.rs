//! The Lambda `bootstrap`: the same router as `earshot serve`, run by `lambda_http` with response
//! streaming, so that SSE and binary frames leave as they are produced. The gateway is built by
//! `earshot_wiring` from the `EARSHOT_*` variables the CDK app sets (`infra/cdk/lib/lambda-env.ts`),
//! exactly as `earshot serve` builds it from the same settings; a bad configuration fails the init
//! with a message that names the variable.

use std::sync::Arc;

use axum::response::IntoResponse;
use earshot_gateway::api_error::ApiError;
use earshot_wiring::{AuthMode, Place, Settings};
use lambda_http::{service_fn, Error, Request};
use tower::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let requested = std::env::var(earshot_wiring::settings::LOG_VARIABLE).ok();
    let filter = tracing_subscriber::EnvFilter::try_new(earshot_wiring::settings::log_directives(requested.as_deref())).unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false).without_time().with_writer(earshot_wiring::log_lines::stderr).init();
    // Read, then checked and converted once.
    let resolved = Settings::parse_vars(|name| std::env::var(name).ok())?.resolve(Place::Lambda)?;
    let auth = resolved.settings().auth;
    let trusted = resolved.settings().proxies()?;
    // Kokoro on Lambda is a SageMaker endpoint: there is no container to watch come up.
    let built = earshot_wiring::connect(resolved).await?;
    let (gateway, _watches) = built.gateway();
    let gateway = Arc::new(gateway);
    // The openers into the sentence cache: rendered while no conversation is live, from the end of the
    // first invocation's conversation on, never beside a caller's first sentences.
    let _warmup = earshot_gateway::warmup::start(gateway.clone(), earshot_gateway::warmup::Begin::AfterFirstConversation);
    let router = earshot_gateway::router(gateway);
    // `none` means the function URL's IAM stands in front: a request it did not authenticate means the
    // URL is open (auth NONE) without the deployment saying so (`public`), and is refused.
    let iam_in_front = auth == AuthMode::None;
    // Where anyone may call, a caller is its address: an IPv6 one by its /64, as `earshot serve` counts it.
    let ipv6_prefix = earshot_gateway::address_slots::DEFAULT_IPV6_PREFIX;
    // The runtime loop ends with an error when its connection to the runtime API breaks (seen when a
    // client leaves mid-stream under cargo lambda's emulator): the process would exit and the next
    // invocation pay a cold start. Start the loop again instead; the gateway is already built.
    loop {
        let (router, trusted) = (router.clone(), trusted.clone());
        let served = lambda_http::run_with_streaming_response(service_fn(move |request: Request| {
            let (router, trusted) = (router.clone(), trusted.clone());
            async move {
                let caller = iam_caller(&request);
                if iam_in_front && caller.is_none() {
                    return Ok(no_iam_caller());
                }
                let address = caller_address(&request, &trusted, ipv6_prefix);
                let (parts, body) = request.into_parts();
                let mut request = axum::http::Request::from_parts(parts, axum::body::Body::from(body.to_vec()));
                if let Some(caller) = caller {
                    request.extensions_mut().insert(caller);
                }
                if let Some(address) = address {
                    request.extensions_mut().insert(address);
                }
                let response = router.oneshot(request).await?;
                Ok::<_, Error>(response)
            }
        }))
        .await;
        match served {
            Ok(()) => return Ok(()),
            Err(e) => {
                tracing::error!("the Lambda runtime loop ended ({e}); starting it again");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// The answer to a request the function URL did not authenticate, where the gateway expects it to.
fn no_iam_caller() -> axum::response::Response {
    let message = "this gateway expects its function URL's AWS_IAM auth, and the request carries no IAM caller: \
                   sign requests (SigV4) against an AWS_IAM URL, deploy with authType TOKEN, or set EARSHOT_AUTH=public \
                   (authType NONE) to let anyone call";
    ApiError::forbidden("iam_caller_missing", message).into_response()
}

/// The caller's network address, from the function URL's request context (`http.sourceIp`, the client's
/// own: AWS, "Invoking Lambda function URLs", the request payload), as its caller (an IPv6 one by its
/// prefix), or the address a trusted proxy in front names (`EARSHOT_TRUSTED_PROXIES`). Where anyone may call
/// (auth `public`), the owner of what it starts.
fn caller_address(request: &Request, trusted: &earshot_gateway::trusted_proxies::TrustedProxies, ipv6_prefix: u8) -> Option<earshot_gateway::CallerAddress> {
    use lambda_http::request::RequestContext;
    use lambda_http::RequestExt;
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => {
            let peer: std::net::IpAddr = context.http.source_ip.as_deref()?.parse().ok()?;
            let address = trusted.caller(peer, request.headers());
            Some(earshot_gateway::CallerAddress(earshot_gateway::address_slots::caller_of(address, ipv6_prefix)))
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The caller's IAM principal, where the function URL authenticated it (`AWS_IAM` auth): the owner of
/// the conversations it starts. Function URLs deliver the API Gateway v2 payload, whose request context
/// carries `authorizer.iam.userArn` (AWS, "Invoking Lambda function URLs": the request payload).
fn iam_caller(request: &Request) -> Option<earshot_gateway::IamCaller> {
    use lambda_http::request::RequestContext;
    use lambda_http::RequestExt;
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => {
            let iam = context.authorizer.as_ref()?.iam.as_ref()?;
            iam.user_arn.clone().or_else(|| iam.caller_id.clone()).filter(|p| !p.is_empty()).map(earshot_gateway::IamCaller)
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}
