// The earshot browser client. See docs/protocol.md for the wire format.
export const PROTOCOL_VERSION = 1;
