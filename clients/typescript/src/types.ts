// The wire types of hookd's protocol 1 (docs/protocol.md), as TypeScript sees them.

/** A request id: an unsigned integer or a string, echoed back verbatim. */
export type RequestId = number | string;

/** Any JSON object. */
export type JsonObject = { [key: string]: unknown };

/** The events hookd knows, in the order of the protocol's event table. */
export const EVENTS = [
  "BeforeTool",
  "AfterTool",
  "BeforeAgent",
  "Notification",
  "AfterAgent",
  "SessionStart",
  "SessionEnd",
  "PreCompress",
  "BeforeModel",
  "AfterModel",
  "BeforeToolSelection",
] as const;

/** An event name. */
export type EventName = (typeof EVENTS)[number];

/** The daemon's `hello`. */
export interface ServerHello {
  type: "hello";
  protocol: number;
  server: string;
  pid: number;
  max_frame_bytes: number;
}

/** How a hook's run ended. */
export interface Outcome {
  kind: "exited" | "signalled" | "timed_out" | "output_too_large" | "spawn_failed" | "cancelled" | "refused" | string;
  code?: number | null;
  signal?: number;
  timeout_ms?: number;
  stream?: "stdout" | "stderr";
  cap_bytes?: number;
  message?: string;
}

/** What one hook did (the protocol's HookRecord). */
export interface HookRecord {
  name: string;
  source: string;
  event: string;
  success: boolean;
  exit_code: number | null;
  duration_ms: number;
  output: unknown;
  output_format: "json" | "text" | null;
  stdout: string;
  stderr: string;
  error: string | null;
  outcome: Outcome;
  failure?: string | null;
  warning?: string;
}

/** The aggregate of an event's hooks. */
export interface EventResult {
  success: boolean;
  /** The hooks' outputs merged by the event's strategy: what the agent acts on. */
  final_output: JsonObject | null;
  all_outputs: unknown[];
  errors: string[];
  total_duration_ms: number;
  hooks: HookRecord[];
  /** The registry generation the event ran against (absent in chunk results). */
  generation?: number;
  /** Set when the client answered locally because no hook listens to the event. */
  skipped?: boolean;
}

/** An `event` request, without its id (the client assigns one). */
export interface EventRequest {
  event: EventName | string;
  cwd: string;
  input?: JsonObject;
  session_id?: string;
  transcript_path?: string;
  env?: Record<string, string>;
  plans_dir?: string;
  project_dir?: string;
  relayed_by?: "gemini" | "claude";
}

/** A `stream_open` request, without its id. */
export interface StreamRequest {
  cwd: string;
  /** Always `AfterModel` (the default). */
  event?: "AfterModel";
  input?: JsonObject;
  session_id?: string;
  transcript_path?: string;
  env?: Record<string, string>;
  plans_dir?: string;
}

/** One chunk's answer. */
export interface ChunkResult {
  seq: number;
  /** The text to emit in place of the chunk's text, when a hook or filter changed it. */
  content?: string;
  result: EventResult;
}

/** A stream's end. */
export interface StreamEnd {
  chunks: number;
  /** Text the filters held back, to emit after the last chunk. */
  flush: string;
}

/** A settings diagnostic. */
export interface Diagnostic {
  severity: "error" | "warning" | "info";
  path?: string;
  key?: string;
  line?: number;
  column?: number;
  message: string;
}

/** A `registry_changed` frame of a subscription. */
export interface RegistryChanged {
  cwd: string;
  generation: number;
  hooks_enabled: boolean;
  hooks: number;
  layers: string[];
  files: string[];
  diagnostics: Diagnostic[];
  missed: number;
}

/** A `hooked_events` answer. */
export interface HookedEvents {
  cwd: string;
  events: string[];
  generation: number;
}

/** A `list` answer. */
export interface ListAnswer {
  cwd: string;
  hooks_enabled: boolean;
  generation: number;
  hooks: JsonObject[];
  diagnostics: Diagnostic[];
}

/** A `status` answer. */
export interface StatusAnswer {
  version: string;
  pid: number;
  uptime_ms: number;
  connections: number;
  events_served: number;
  registries: { cwd: string; generation: number; hooks: number; diagnostics: Diagnostic[] }[];
  [key: string]: unknown;
}

/** Any message the daemon sends. */
export interface ServerMessage extends JsonObject {
  type: string;
  id?: RequestId | null;
}
