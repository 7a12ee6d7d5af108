//! The Lambda binary served the way Lambda serves it (`cargo lambda watch`: function-URL semantics
//! with response streaming), against the AWS stand-ins: an answer arrives in pieces as it is
//! produced, not as one buffered body. `make test-lambda` starts the stack and runs this test with
//! `EARSHOT_LAMBDA_URL` set; on its own it is ignored.

use earshot_client::{speak, CallOptions};
use earshot_core::protocol::Delivery;
use earshot_e2e::{check_conversation, text};

#[tokio::test]
#[ignore = "needs the Lambda under cargo lambda watch: make test-lambda"]
async fn the_lambda_streams_its_answer_through_the_function_url() {
    let url = std::env::var("EARSHOT_LAMBDA_URL").expect("EARSHOT_LAMBDA_URL: the function URL of cargo lambda watch");
    for delivery in [Delivery::Sse, Delivery::Binary] {
        let body = text("Hello there. How are you today? I hope it is going well.");
        let r = speak(&url, &body, &CallOptions { delivery, ..Default::default() }).await.expect("the Lambda answers");
        check_conversation(&r);
        let timeline = r.timeline.as_ref().unwrap();
        let server_span = timeline.done_ms.unwrap() - timeline.first_audio_sent_ms.unwrap();
        let client_span = r.marks.done_ms.unwrap() - r.marks.first_audio_decoded_ms.unwrap();
        // Buffered, the client would get the first audio and the end together; streamed, it sees most
        // of the time the server spent between them.
        assert!(server_span > 0.0);
        assert!(client_span > server_span * 0.5, "{delivery:?}: client saw {client_span:.0} ms between first audio and end, the server {server_span:.0} ms");
    }
}
