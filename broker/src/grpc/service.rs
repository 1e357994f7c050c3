//! The `MessagingService` implementation: reads each request's context and hands it to
//! the function of its RPC family. Business outcomes are the `status` inside each
//! response; a transport error only for a Telemetry stream that cannot go on, as in
//! Apache's proxy.

use std::future::Future;

use tokio::sync::OwnedSemaphorePermit;
use tonic::{Request, Response, Streaming};

use super::access::{self, Needs};
use super::context::RequestContext;
use super::endpoint::GrpcService;
use super::proto::messaging_service_server::MessagingService;
use super::proto::receive_message_response::Content as ReceiveContent;
use super::proto::{
    AckMessageRequest, AckMessageResponse, ChangeInvisibleDurationRequest,
    ChangeInvisibleDurationResponse, Code, EndTransactionRequest, EndTransactionResponse,
    ForwardMessageToDeadLetterQueueRequest, ForwardMessageToDeadLetterQueueResponse,
    GetOffsetRequest, GetOffsetResponse, HeartbeatRequest, HeartbeatResponse,
    NotifyClientTerminationRequest, NotifyClientTerminationResponse, PullMessageRequest,
    PullMessageResponse, QueryAssignmentRequest, QueryAssignmentResponse, QueryOffsetRequest,
    QueryOffsetResponse, QueryRouteRequest, QueryRouteResponse, RecallMessageRequest,
    RecallMessageResponse, ReceiveMessageRequest, ReceiveMessageResponse, SendMessageRequest,
    SendMessageResponse, Status, SyncLiteSubscriptionRequest, SyncLiteSubscriptionResponse,
    TelemetryCommand, UpdateOffsetRequest, UpdateOffsetResponse,
};
use super::pull::PullStream;
use super::receive::ReceiveStream;
use super::status::status;
use super::telemetry::TelemetryStream;
use super::{ack, client, pull, recall, receive, route, send, telemetry, transaction};

/// A response that can carry a refusal as its status.
trait Refusal {
    fn refused(status: Status) -> Self;
}

macro_rules! refusal {
    ($($t:ty),* $(,)?) => {
        $(impl Refusal for $t {
            fn refused(status: Status) -> Self {
                // Responses with only a status take no update.
                #[allow(clippy::needless_update, reason = "the macro serves responses with and without more fields")]
                Self { status: Some(status), ..Default::default() }
            }
        })*
    };
}

refusal!(
    QueryRouteResponse,
    HeartbeatResponse,
    SendMessageResponse,
    QueryAssignmentResponse,
    AckMessageResponse,
    ForwardMessageToDeadLetterQueueResponse,
    UpdateOffsetResponse,
    GetOffsetResponse,
    QueryOffsetResponse,
    EndTransactionResponse,
    NotifyClientTerminationResponse,
    ChangeInvisibleDurationResponse,
    RecallMessageResponse,
    SyncLiteSubscriptionResponse,
);

/// Runs a unary RPC: the request's context first (CLIENT_ID_REQUIRED without one),
/// then the ACL check (when on), then the RPC.
async fn unary<Req, Resp, Fut>(
    service: &GrpcService,
    request: Request<Req>,
    run: impl FnOnce(RequestContext, Req) -> Fut,
) -> Result<Response<Resp>, tonic::Status>
where
    Req: Needs,
    Resp: Refusal,
    Fut: Future<Output = Resp>,
{
    let ctx = match RequestContext::of(&request) {
        Ok(ctx) => ctx,
        Err(status) => return Ok(Response::new(Resp::refused(status))),
    };
    let request = request.into_inner();
    if let Some(status) =
        access::refusal(&service.broker, &ctx, request.needs(&service.broker, &ctx))
    {
        return Ok(Response::new(Resp::refused(status)));
    }
    Ok(Response::new(run(ctx, request).await))
}

/// Admits a server-streaming RPC as [`unary`] does a unary one, plus a stream permit
/// held while the RPC waits for messages; the error is the status of the stream's one
/// refusing item.
fn admit_stream<Req: Needs>(
    service: &GrpcService,
    request: &Request<Req>,
) -> Result<(RequestContext, OwnedSemaphorePermit), Status> {
    let ctx = RequestContext::of(request)?;
    let needs = request.get_ref().needs(&service.broker, &ctx);
    if let Some(status) = access::refusal(&service.broker, &ctx, needs) {
        return Err(status);
    }
    let permit = service
        .stream_permit()
        .ok_or_else(|| status(Code::TooManyRequests, "too many streams open"))?;
    Ok((ctx, permit))
}

fn refused_stream<T: Send + 'static>(
    item: T,
) -> std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<T, tonic::Status>> + Send>> {
    Box::pin(futures_util::stream::iter([Ok(item)]))
}

#[tonic::async_trait]
impl MessagingService for GrpcService {
    async fn query_route(
        &self,
        request: Request<QueryRouteRequest>,
    ) -> Result<Response<QueryRouteResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            route::query_route(self, &ctx, req).await
        })
        .await
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            client::heartbeat(self, &ctx, req).await
        })
        .await
    }

    async fn send_message(
        &self,
        request: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            send::send_message(self, &ctx, req).await
        })
        .await
    }

    async fn query_assignment(
        &self,
        request: Request<QueryAssignmentRequest>,
    ) -> Result<Response<QueryAssignmentResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            route::query_assignment(self, &ctx, req).await
        })
        .await
    }

    type ReceiveMessageStream = ReceiveStream;

    async fn receive_message(
        &self,
        request: Request<ReceiveMessageRequest>,
    ) -> Result<Response<ReceiveStream>, tonic::Status> {
        let (ctx, _permit) = match admit_stream(self, &request) {
            Ok(admitted) => admitted,
            Err(status) => {
                return Ok(Response::new(refused_stream(ReceiveMessageResponse {
                    content: Some(ReceiveContent::Status(status)),
                })))
            }
        };
        let deadline = receive::deadline_ms(request.metadata());
        let stream = receive::receive_message(self, &ctx, deadline, request.into_inner()).await;
        Ok(Response::new(stream))
    }

    async fn ack_message(
        &self,
        request: Request<AckMessageRequest>,
    ) -> Result<Response<AckMessageResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            ack::ack_message(self, &ctx, req).await
        })
        .await
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<ForwardMessageToDeadLetterQueueResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            ack::forward_to_dlq(self, &ctx, req).await
        })
        .await
    }

    type PullMessageStream = PullStream;

    async fn pull_message(
        &self,
        request: Request<PullMessageRequest>,
    ) -> Result<Response<PullStream>, tonic::Status> {
        use super::proto::pull_message_response::Content;
        let (ctx, _permit) = match admit_stream(self, &request) {
            Ok(admitted) => admitted,
            Err(status) => {
                return Ok(Response::new(refused_stream(PullMessageResponse {
                    content: Some(Content::Status(status)),
                })))
            }
        };
        Ok(Response::new(
            pull::pull_message(self, &ctx, request.into_inner()).await,
        ))
    }

    async fn update_offset(
        &self,
        request: Request<UpdateOffsetRequest>,
    ) -> Result<Response<UpdateOffsetResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            pull::update_offset(self, &ctx, req)
        })
        .await
    }

    async fn get_offset(
        &self,
        request: Request<GetOffsetRequest>,
    ) -> Result<Response<GetOffsetResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            pull::get_offset(self, &ctx, req)
        })
        .await
    }

    async fn query_offset(
        &self,
        request: Request<QueryOffsetRequest>,
    ) -> Result<Response<QueryOffsetResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            pull::query_offset(self, &ctx, req).await
        })
        .await
    }

    async fn end_transaction(
        &self,
        request: Request<EndTransactionRequest>,
    ) -> Result<Response<EndTransactionResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            transaction::end_transaction(self, &ctx, req).await
        })
        .await
    }

    type TelemetryStream = TelemetryStream;

    async fn telemetry(
        &self,
        request: Request<Streaming<TelemetryCommand>>,
    ) -> Result<Response<TelemetryStream>, tonic::Status> {
        let Some(permit) = self.stream_permit() else {
            return Err(tonic::Status::resource_exhausted("too many streams open"));
        };
        telemetry::telemetry(self, request, permit).await
    }

    async fn notify_client_termination(
        &self,
        request: Request<NotifyClientTerminationRequest>,
    ) -> Result<Response<NotifyClientTerminationResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            client::notify_client_termination(self, &ctx, req).await
        })
        .await
    }

    async fn change_invisible_duration(
        &self,
        request: Request<ChangeInvisibleDurationRequest>,
    ) -> Result<Response<ChangeInvisibleDurationResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            ack::change_invisible_duration(self, &ctx, req).await
        })
        .await
    }

    async fn recall_message(
        &self,
        request: Request<RecallMessageRequest>,
    ) -> Result<Response<RecallMessageResponse>, tonic::Status> {
        unary(self, request, |ctx, req| async move {
            recall::recall_message(self, &ctx, req).await
        })
        .await
    }

    async fn sync_lite_subscription(
        &self,
        request: Request<SyncLiteSubscriptionRequest>,
    ) -> Result<Response<SyncLiteSubscriptionResponse>, tonic::Status> {
        unary(self, request, |_ctx, _req| async move {
            SyncLiteSubscriptionResponse {
                status: Some(status(
                    Code::NotImplemented,
                    "lite topics are not supported by this broker",
                )),
            }
        })
        .await
    }
}
