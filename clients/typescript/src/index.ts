// hookd's TypeScript client: see docs/clients.md and docs/protocol.md.

export {
  ConnectionLostError,
  HookdClient,
  HookdError,
  HookedEventsWatch,
  PROTOCOL_VERSION,
  Stream,
  Subscription,
  type ConnectOptions,
  type EventOptions,
} from "./client.js";
export { FrameDecoder, FrameTooLargeError, encodeFrame } from "./framing.js";
export { UntrustedSocketError, checkSocketPath, resolveSocketPath } from "./socket.js";
export * from "./types.js";
