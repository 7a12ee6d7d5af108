// What bounds a deployment's bill, in the words `make deploy` prints: the caps the gateway enforces and
// the alarms that only tell (SpendGuards), and where anyone may call (auth NONE) what one stranger can cost
// in an hour at most (StrangerCeiling). Kept apart from the stack so that the deploy's preflight can say
// the same sentences from the configuration alone, before anything is made.
import { EarshotConfig, deployedBackends } from './config';
import { publishedPrices } from './prices';

/**
 * The deployment's spend guards in words, with Polly's cost of the per-caller budget at the dated list price
 * (docs/prices.json): the caps the gateway enforces (refusing or cutting), then the alarms that only notify.
 */
export function spendGuards(c: EarshotConfig): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const polly = deployedBackends(c).includes('polly');
  const prices = publishedPrices();
  // Auth NONE: a caller is its network address (docs/access.md), so every per-caller cap is per address.
  const caller = c.authType === 'NONE' ? 'caller address' : 'caller';
  const caps = [
    c.reservedConcurrency > 0 ? `${n(c.reservedConcurrency)} requests at once, conversations and interrupts together (reservedConcurrency)` : 'requests at once: no cap (reservedConcurrency 0)',
    c.maxConversationsPerOwner > 0 ? `${n(c.maxConversationsPerOwner)} live per ${caller}` : `live per ${caller}: no cap`,
    c.maxCharsPerOwnerHour > 0
      ? `${n(c.maxCharsPerOwnerHour)} characters per ${caller} per rolling hour${polly ? ` (about $${((c.maxCharsPerOwnerHour * prices.pollyPerMillionCharacters) / 1e6).toFixed(2)} of Polly at ${prices.asOf} list prices)` : ''}`
      : `characters per ${caller}: no budget`,
    c.maxInputCharsPerOwnerHour > 0 ? `${n(c.maxInputCharsPerOwnerHour)} characters sent per ${caller} per rolling hour (the agent's input)` : `characters sent per ${caller}: no budget`,
    c.maxRequestsPerOwnerMinute > 0 ? `${n(c.maxRequestsPerOwnerMinute)} requests per ${caller} per minute` : `requests per ${caller}: no cap`,
  ];
  const alarms = [
    c.alarmInvocationsPerHour > 0 ? `${n(c.alarmInvocationsPerHour)} conversations an hour` : undefined,
    c.alarmPollyCharactersPerHour > 0 && polly ? `${n(c.alarmPollyCharactersPerHour)} Polly characters an hour` : undefined,
  ].filter((a): a is string => a !== undefined);
  return `caps: ${caps.join('; ')}. alarms (notify only): ${alarms.length > 0 ? alarms.join('; ') : 'none'}`;
}

/** `chars` characters spoken an hour in words, with Polly's cost where Polly is deployed (else `otherwise`). */
function spokenLine(c: EarshotConfig, chars: number, otherwise: string): string {
  const prices = publishedPrices();
  const polly = deployedBackends(c).includes('polly');
  return `${chars.toLocaleString('en-US')} characters spoken${polly ? ` ($${((chars * prices.pollyPerMillionCharacters) / 1e6).toFixed(2)} of Polly)` : otherwise}`;
}

/** `chars` characters sent to the agent an hour in words, with the input tokens they make. */
function sentLine(chars: number): string {
  return `${chars.toLocaleString('en-US')} characters sent to the agent (about ${Math.ceil(chars / 4).toLocaleString('en-US')} input tokens, at the agent's price)`;
}

/**
 * Auth NONE: what one stranger (one caller address, an IPv6 one by its /64: docs/access.md) can spend in an
 * hour at most, at the dated list prices (docs/prices.json), and what holds all of them together. Each
 * per-address cap bounds one line; a cap that is off leaves that line unbounded, and the sentence says so.
 * Lambda's share assumes the address keeps its every conversation alive the whole hour (each invocation
 * ends at the timeout, the next begins), the most it can hold.
 */
export function strangerCeiling(c: EarshotConfig): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const usd = (x: number) => `$${x.toFixed(2)}`;
  const prices = publishedPrices();
  const gb = c.lambdaMemoryMb / 1024;
  const lambdaHour = (atOnce: number, requests: number) => atOnce * 3600 * gb * prices.lambdaPerGbSecond + (requests * prices.lambdaPerMillionRequests) / 1e6;
  const requests = c.maxRequestsPerOwnerMinute * 60;
  const parts = [
    c.maxCharsPerOwnerHour > 0 ? spokenLine(c, c.maxCharsPerOwnerHour, ' (the Kokoro endpoint bills by the hour, not by the character)') : 'characters spoken: no limit',
    c.maxInputCharsPerOwnerHour > 0 ? sentLine(c.maxInputCharsPerOwnerHour) : 'characters sent to the agent: no limit',
    c.maxConversationsPerOwner > 0 && c.maxRequestsPerOwnerMinute > 0
      ? `${n(requests)} requests, ${n(c.maxConversationsPerOwner)} at once (${usd(lambdaHour(c.maxConversationsPerOwner, requests))} of Lambda at ${n(c.lambdaMemoryMb)} MB)`
      : 'requests: no limit',
  ];
  const bounded = c.maxCharsPerOwnerHour > 0 && c.maxInputCharsPerOwnerHour > 0 && c.maxConversationsPerOwner > 0 && c.maxRequestsPerOwnerMinute > 0;
  const all = c.reservedConcurrency > 0
    ? `all callers together: ${n(c.reservedConcurrency)} requests at once (reservedConcurrency; at most ${usd(lambdaHour(c.reservedConcurrency, 0))} of Lambda an hour, plus what they speak and send)`
    : 'all callers together: no cap (reservedConcurrency 0)';
  return `One stranger (one address, or one IPv6 /64) in an hour${bounded ? ' at most' : ''}: ${parts.join('; ')}. Each new address adds as much; ${all}.`;
}

/**
 * The deployment's ceiling (docs/security.md): what all callers together can spend in an hour at most, at the
 * dated list prices (docs/prices.json), whatever the number of addresses; each limit that is 0 is said to be off.
 */
export function deploymentCeiling(c: EarshotConfig): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const usd = (x: number) => `$${x.toFixed(2)}`;
  const prices = publishedPrices();
  const parts = [
    c.ceilingCharsPerHour > 0 ? spokenLine(c, c.ceilingCharsPerHour, '') : 'characters spoken: no ceiling',
    c.ceilingInputCharsPerHour > 0 ? sentLine(c.ceilingInputCharsPerHour) : 'characters sent to the agent: no ceiling',
    c.ceilingRequestsPerHour > 0
      ? `${n(c.ceilingRequestsPerHour)} requests (${usd((c.ceilingRequestsPerHour * prices.lambdaPerMillionRequests) / 1e6)} of Lambda requests)`
      : 'requests: no ceiling',
  ];
  return `All callers together in an hour at most: ${parts.join('; ')}; past it 503 spend_ceiling and the SpendCeilingReached alarm.`;
}
