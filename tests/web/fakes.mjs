// Stand-ins for what the client uses from a browser, so its rules (message order, errors,
// interruption, gap measurement) can be tested under Node without sound: an AudioContext whose clock
// the test moves by hand, and a fetch that answers with a scripted stream and notices when the
// client aborts it, as a server notices a closed connection.

/** An AudioContext with a hand-moved clock that records what is scheduled and stopped. */
export class FakeAudioContext {
  constructor() {
    this.currentTime = 0;
    this.state = 'running';
    this.outputLatency = 0.02;
    this.baseLatency = 0.005;
    this.destination = { connect() {} };
    this.sources = [];
  }
  resume() {
    this.state = 'running';
    return Promise.resolve();
  }
  createAnalyser() {
    return { fftSize: 2048, connect() {}, getFloatTimeDomainData(a) { a.fill(0); } };
  }
  createGain() {
    return { gain: { value: 1 }, connect() {}, disconnect() {} };
  }
  createBuffer(channels, length, sampleRate) {
    const data = new Float32Array(length);
    return { numberOfChannels: channels, length, sampleRate, duration: length / sampleRate, data, copyToChannel(samples) { data.set(samples); } };
  }
  createBufferSource() {
    const source = {
      buffer: null,
      startedAt: null,
      stopped: false,
      onended: null,
      connect() {},
      start(when) {
        source.startedAt = when;
      },
      stop() {
        source.stopped = true;
        queueMicrotask(() => source.onended?.());
      },
    };
    this.sources.push(source);
    return source;
  }
}

/**
 * A fetch that answers every request with `respond(request)`: `{ status, headers, body }`, where the
 * body is a list of steps, each bytes to send or a function to run when the client has read up to
 * there (it may return a promise to hold the stream). `server` says what the fake server saw.
 */
export function fakeFetch(respond) {
  const server = { requests: [], cancelled: false, finished: false };
  const fetch = async (url, init) => {
    const request = { url, method: init.method, headers: init.headers, body: init.body === undefined ? null : JSON.parse(init.body) };
    server.requests.push(request);
    const { status = 200, headers = {}, body = [] } = respond(request);
    const steps = [...body];
    let streamController;
    const stream = new ReadableStream({
      start(controller) {
        streamController = controller;
      },
      async pull(controller) {
        while (steps.length > 0) {
          const step = steps.shift();
          if (typeof step === 'function') {
            await step();
            continue;
          }
          controller.enqueue(step);
          return;
        }
        server.finished = true;
        controller.close();
      },
      cancel() {
        server.cancelled = true;
      },
    });
    // As in a browser, aborting the request fails the body being read.
    init.signal?.addEventListener('abort', () => {
      server.cancelled = true;
      streamController.error(new DOMException('The operation was aborted.', 'AbortError'));
    });
    return new Response(stream, { status, headers });
  };
  return { fetch, server };
}

/** Resolves when `condition()` holds, checking every few milliseconds, or rejects after `ms`. */
export async function until(condition, ms = 2000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms: ${condition}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
