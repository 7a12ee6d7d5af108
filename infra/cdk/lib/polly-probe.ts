// Whether Polly's bidirectional streaming answers in a Region, asked the only way AWS allows: by opening a
// StartSpeechSynthesisStream. No API lists the Regions that offer the operation and the aws CLI cannot call it
// (an HTTP/2 stream both ways), but the JavaScript SDK can (`@aws-sdk/client-polly` sends it over
// NodeHttp2Handler). The probe opens one stream, sends only a CloseStreamEvent (no text: no characters billed;
// Polly prices by character) and waits for the stream's end. What the answer means is decided by `judgeProbe`,
// kept apart so that the tests can hold each kind of answer to its verdict.
import { PollyClient, StartSpeechSynthesisStreamCommand, StartSpeechSynthesisStreamActionStream } from '@aws-sdk/client-polly';

/** What one probe found. */
export type PollyProbe =
  /** Polly answered the operation (a closed stream, or one of the operation's own errors). */
  | { readonly kind: 'offered'; readonly detail: string }
  /** The Region's Polly endpoint does not know the operation (404, UnknownOperationException). */
  | { readonly kind: 'absent'; readonly detail: string }
  /** No verdict: no credentials, no permission, no connection, no answer in time. */
  | { readonly kind: 'unknown'; readonly detail: string };

/**
 * The exceptions StartSpeechSynthesisStream itself models (Polly API reference): inside the stream the SDK
 * builds them without an HTTP status, so they are known by name.
 */
const OPERATION_ERRORS = ['ValidationException', 'ThrottlingException', 'ServiceQuotaExceededException', 'ServiceFailureException'];

/** What an error from the SDK says of the operation (its name, HTTP status and message, as the SDK sets them). */
export function judgeProbe(error: { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }): PollyProbe {
  const name = error.name ?? 'Error';
  const status = error.$metadata?.httpStatusCode;
  const said = `${name}${status ? ` (HTTP ${status})` : ''}: ${(error.message ?? '').split('\n')[0]}`;
  if (status === undefined && OPERATION_ERRORS.includes(name)) return { kind: 'offered', detail: `Polly answered the stream with ${said}` };
  if (name === 'UnknownOperationException' || status === 404) return { kind: 'absent', detail: said };
  // The caller may not ask, or its credentials are not taken: the operation may well be there.
  if (status === 401 || status === 403 || /AccessDenied|UnrecognizedClient|InvalidSignature|ExpiredToken|Credentials/i.test(name)) {
    return { kind: 'unknown', detail: said };
  }
  // Any other answer from Polly (a validation error, throttling, a quota, a service failure) comes from the
  // operation itself, so the Region has it.
  if (status !== undefined) return { kind: 'offered', detail: `Polly answered the stream with ${said}` };
  // No HTTP answer at all: a network failure, a timeout or no credentials found.
  return { kind: 'unknown', detail: said };
}

/** Opens one stream with the configured voice and closes it at once; never throws. */
export async function probePollyStream(region: string, voiceId: string, timeoutMs = 20_000): Promise<PollyProbe> {
  // The SDK's notice that its releases after January 2027 need Node 22 says nothing of this pinned version,
  // which runs on the Node 20 the CDK app requires; the probe's own verdict is the only thing to print.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const silent = { trace: () => {}, debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const client = new PollyClient({ region, maxAttempts: 1, logger: silent });
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  async function* actions(): AsyncGenerator<StartSpeechSynthesisStreamActionStream> {
    yield { CloseStreamEvent: {} };
  }
  try {
    const answer = await client.send(
      new StartSpeechSynthesisStreamCommand({ Engine: 'generative', OutputFormat: 'pcm', VoiceId: voiceId as never, ActionStream: actions() }),
      { abortSignal: abort.signal },
    );
    for await (const event of answer.EventStream ?? []) {
      if (event.StreamClosedEvent) {
        return { kind: 'offered', detail: `a stream opened and closed (${event.StreamClosedEvent.RequestCharacters ?? 0} characters billed)` };
      }
    }
    return { kind: 'offered', detail: 'a stream opened and ended without StreamClosedEvent' };
  } catch (e) {
    if (abort.signal.aborted) return { kind: 'unknown', detail: `no answer within ${timeoutMs / 1000} s` };
    return judgeProbe(e as Error);
  } finally {
    clearTimeout(timer);
    client.destroy();
  }
}
