// The hookd client: one Unix-socket connection, requests multiplexed over it by id, and a
// reconnect that carries pending requests over to the next daemon.

import { createConnection, type Socket } from "node:net";

import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder, encodeFrame } from "./framing.js";
import { checkSocketPath, resolveSocketPath } from "./socket.js";
import type {
  ChunkResult,
  EventRequest,
  EventResult,
  HookRecord,
  HookedEvents,
  JsonObject,
  ListAnswer,
  RegistryChanged,
  RequestId,
  ServerHello,
  ServerMessage,
  StatusAnswer,
  StreamEnd,
  StreamRequest,
} from "./types.js";

/** The protocol version this client speaks. */
export const PROTOCOL_VERSION = 1;

/** How to connect. */
export interface ConnectOptions {
  /** The socket path; default: resolved as hookd and hookctl resolve it. */
  socket?: string;
  /**
   * The hooks' base environment, sent in `hello`. Default: this process's environment;
   * `null`: none (hooks get the daemon's environment).
   */
  env?: Record<string, string> | null;
  /** The client's name and version, for the daemon's logs. */
  client?: string;
  /** Reconnect when the connection is lost and send pending requests again (default true). */
  reconnect?: boolean;
  /** How long a reconnect may keep trying before pending requests fail (default 10 s). */
  reconnectTimeoutMs?: number;
  /** How long to wait for the daemon's `hello` (default 5 s). */
  handshakeTimeoutMs?: number;
  /**
   * How long {@link HookdClient.connect} waits for a daemon that is not listening yet
   * (default 0: fail at once).
   */
  connectTimeoutMs?: number;
}

/** An `error` answer from the daemon. */
export class HookdError extends Error {
  override name = "HookdError";
  constructor(
    public readonly code: string,
    message: string,
    public readonly id: RequestId | null = null,
  ) {
    super(`${code}: ${message}`);
  }
}

/** The connection was lost and the request could not be carried over. */
export class ConnectionLostError extends Error {
  override name = "ConnectionLostError";
  readonly code = "connection_lost";
}

/** One live connection: its socket and frame decoder. */
interface Connection {
  socket: Socket;
  decoder: FrameDecoder;
  hello: ServerHello;
}

/** A request waiting for its final answer. */
interface Pending {
  message: JsonObject & { id: number };
  /** Whether it is sent again on a new connection (a stream is not: its state is gone). */
  resend: boolean;
  /** The connection it was last written to; `null` when it is still to be written. */
  sentOn: Connection | null;
  /** Called with each answer; the handler calls `client.finish(id)` on the final one. */
  onMessage(message: ServerMessage): void;
  /** Called when the request is lost for good. */
  onLost(error: Error): void;
}

/** The empty result of an event no hook listens to. */
function emptyResult(generation?: number): EventResult {
  return {
    success: true,
    final_output: null,
    all_outputs: [],
    errors: [],
    total_duration_ms: 0,
    hooks: [],
    ...(generation === undefined ? {} : { generation }),
  };
}

/** The `EventResult` fields of a `result` or `chunk_result.result` frame. */
function toResult(message: JsonObject): EventResult {
  return {
    success: Boolean(message.success),
    final_output: (message.final_output ?? null) as JsonObject | null,
    all_outputs: (message.all_outputs ?? []) as unknown[],
    errors: (message.errors ?? []) as string[],
    total_duration_ms: Number(message.total_duration_ms ?? 0),
    hooks: (message.hooks ?? []) as HookRecord[],
    ...(typeof message.generation === "number" ? { generation: message.generation } : {}),
  };
}

function errorOf(message: ServerMessage): HookdError {
  return new HookdError(String(message.code), String(message.message ?? ""), message.id ?? null);
}

/** Options of one event. */
export interface EventOptions {
  /** Called as each hook finishes (asks the daemon for `hook_result` frames). */
  onHookResult?: (index: number, hook: HookRecord) => void;
  /** Cancels the event: its hooks are stopped, and its result still comes. */
  signal?: AbortSignal;
}

/**
 * A client of hookd. Create it with {@link HookdClient.connect}; any number of requests may
 * be in flight at once, and each answer is routed to its request by id.
 */
export class HookdClient {
  private connection: Connection | null = null;
  private connecting: Promise<Connection> | null = null;
  private readonly pending = new Map<number, Pending>();
  private readonly watches = new Map<string, HookedEventsWatch>();
  private readonly taps = new Set<(message: ServerMessage) => void>();
  private nextId = 1;
  private closed = false;
  private readonly socketPath: string;
  private readonly options: Required<Omit<ConnectOptions, "env" | "socket">> & { env: Record<string, string> | null };

  private constructor(options: ConnectOptions) {
    this.socketPath = options.socket ?? resolveSocketPath();
    const env =
      options.env === undefined
        ? Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => typeof entry[1] === "string"))
        : options.env;
    this.options = {
      env,
      client: options.client ?? "hookd-client-ts/0.1.0",
      reconnect: options.reconnect ?? true,
      reconnectTimeoutMs: options.reconnectTimeoutMs ?? 10_000,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? 5_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 0,
    };
  }

  /** Connects and completes the handshake. */
  static async connect(options: ConnectOptions = {}): Promise<HookdClient> {
    const client = new HookdClient(options);
    const waitMs = client.options.connectTimeoutMs;
    await client.ensureConnected(waitMs > 0, waitMs);
    return client;
  }

  /** The daemon's `hello` on the current connection, if connected. */
  get serverHello(): ServerHello | null {
    return this.connection?.hello ?? null;
  }

  /** Closes the connection; pending requests fail. */
  close(): void {
    this.closed = true;
    const connection = this.connection;
    this.connection = null;
    connection?.socket.destroy();
    this.failAll(new ConnectionLostError("the client was closed"));
  }

  // ---- requests ----------------------------------------------------------------------

  /** Sends `ping` and waits for `pong`. */
  async ping(): Promise<void> {
    await this.call({ type: "ping" });
  }

  /** The daemon's state. */
  async status(): Promise<StatusAnswer> {
    return (await this.call({ type: "status" })) as unknown as StatusAnswer;
  }

  /** The hooks configured for a project. */
  async list(cwd: string): Promise<ListAnswer> {
    return (await this.call({ type: "list", cwd })) as unknown as ListAnswer;
  }

  /** The events that have at least one enabled hook for a project. */
  async hookedEvents(cwd: string): Promise<HookedEvents> {
    return (await this.call({ type: "hooked_events", cwd })) as unknown as HookedEvents;
  }

  /**
   * Sends any request (an id is assigned) and resolves with its final answer; an `error`
   * answer rejects with {@link HookdError}. `onMessage` sees the non-final answers.
   */
  call(request: JsonObject, onMessage?: (message: ServerMessage) => void): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const id = this.allocateId();
      this.start({
        message: { ...request, id },
        resend: true,
        sentOn: null,
        onMessage: (message) => {
          if (isNonFinal(message.type)) {
            onMessage?.(message);
            return;
          }
          this.finish(id);
          if (message.type === "error") {
            reject(errorOf(message));
          } else {
            resolve(message);
          }
        },
        onLost: reject,
      });
    });
  }

  /**
   * Sends a message as it is, with the id it carries, and calls `onMessage` with every
   * answer that carries that id until `isFinal` says one is the last (then resolves with
   * it). For tests and tools that speak the protocol frame by frame; nothing is checked
   * and nothing is sent again after a reconnect.
   */
  raw(
    message: JsonObject & { id: number },
    isFinal: (answer: ServerMessage) => boolean,
    onMessage?: (answer: ServerMessage) => void,
  ): Promise<ServerMessage> {
    return new Promise((resolve, reject) => {
      const id = message.id;
      this.start({
        message,
        resend: false,
        sentOn: null,
        onMessage: (answer) => {
          onMessage?.(answer);
          if (isFinal(answer)) {
            this.finish(id);
            resolve(answer);
          }
        },
        onLost: reject,
      });
    });
  }

  /**
   * Calls `listener` with every frame the daemon sends from now on, whatever request it
   * answers; returns the function that removes it. With {@link sendRaw}, for tests and tools
   * that speak the protocol frame by frame.
   */
  tap(listener: (message: ServerMessage) => void): () => void {
    this.taps.add(listener);
    return () => {
      this.taps.delete(listener);
    };
  }

  /**
   * Writes a message as it is on the current connection (no id is assigned, nothing waits
   * for its answer: see {@link tap}). Throws when not connected.
   */
  sendRaw(message: JsonObject): void {
    const connection = this.connection;
    if (!connection) {
      throw new ConnectionLostError("not connected to hookd");
    }
    connection.socket.write(encodeFrame(message));
  }

  /**
   * Fires an event and resolves with the hooks' aggregate result. Hooks run in the daemon;
   * `final_output` is what the agent acts on.
   */
  event(request: EventRequest, options: EventOptions = {}): Promise<EventResult> {
    return new Promise((resolve, reject) => {
      const id = this.allocateId();
      const onAbort = (): void => {
        void this.cancel(id).catch(() => undefined);
      };
      this.start({
        message: { type: "event", ...request, id, stream_hooks: Boolean(options.onHookResult) },
        resend: true,
        sentOn: null,
        onMessage: (message) => {
          if (message.type === "hook_result") {
            options.onHookResult?.(Number(message.index), message.hook as HookRecord);
            return;
          }
          this.finish(id);
          options.signal?.removeEventListener("abort", onAbort);
          if (message.type === "result") {
            resolve(toResult(message));
          } else if (message.type === "error") {
            reject(errorOf(message));
          } else {
            reject(new HookdError("internal", `unexpected ${message.type} answer to an event`, id));
          }
        },
        onLost: (error) => {
          options.signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      });
      if (options.signal?.aborted) {
        onAbort();
      } else {
        options.signal?.addEventListener("abort", onAbort, { once: true });
      }
    });
  }

  /**
   * Like {@link event}, but answered locally, without a round trip, when a
   * {@link watchHookedEvents} watch of the project says no hook listens to the event (the
   * daemon would have answered with the same empty result). The result then has `skipped`.
   */
  fire(request: EventRequest, options: EventOptions = {}): Promise<EventResult> {
    const watch = this.watches.get(request.project_dir ?? request.cwd);
    if (watch && !watch.isHooked(request.event)) {
      return Promise.resolve({ ...emptyResult(watch.generation), skipped: true });
    }
    return this.event(request, options);
  }

  /** Cancels an in-flight event, stream or subscription; `false` when it was not in flight. */
  async cancel(target: RequestId): Promise<boolean> {
    try {
      await this.call({ type: "cancel", target });
      return true;
    } catch (error) {
      if (error instanceof HookdError && error.code === "unknown_id") {
        return false;
      }
      throw error;
    }
  }

  /**
   * Subscribes to registry changes (of one project, or of every loaded one). The callback
   * gets each `registry_changed` frame; the subscription is renewed after a reconnect.
   */
  subscribe(cwd: string | undefined, onChange: (change: RegistryChanged) => void): Promise<Subscription> {
    return new Promise((resolve, reject) => {
      const id = this.allocateId();
      let acknowledged = false;
      const subscription = new Subscription(this, id);
      this.start({
        message: { type: "subscribe", id, ...(cwd === undefined ? {} : { cwd }) },
        resend: true,
        sentOn: null,
        onMessage: (message) => {
          if (message.type === "subscribed") {
            if (!acknowledged) {
              acknowledged = true;
              resolve(subscription);
            }
          } else if (message.type === "registry_changed") {
            onChange(message as unknown as RegistryChanged);
          } else if (message.type === "error") {
            this.finish(id);
            if (!acknowledged) {
              reject(errorOf(message));
            }
          }
        },
        onLost: (error) => {
          if (!acknowledged) {
            reject(error);
          }
        },
      });
    });
  }

  /**
   * Keeps the list of a project's hooked events up to date (a `hooked_events`
   * subscription), so that {@link fire} answers events nobody listens to locally.
   */
  watchHookedEvents(cwd: string): Promise<HookedEventsWatch> {
    const existing = this.watches.get(cwd);
    if (existing) {
      return existing.ready;
    }
    const id = this.allocateId();
    const watch = new HookedEventsWatch(this, id, cwd);
    this.watches.set(cwd, watch);
    this.start({
      message: { type: "hooked_events", id, cwd, subscribe: true },
      resend: true,
      sentOn: null,
      onMessage: (message) => {
        if (message.type === "hooked_events") {
          watch.update(message as unknown as HookedEvents);
        } else if (message.type === "error") {
          this.finish(id);
          this.watches.delete(cwd);
          watch.fail(errorOf(message));
        }
      },
      onLost: (error) => {
        this.watches.delete(cwd);
        watch.fail(error);
      },
    });
    return watch.ready;
  }

  /** Opens an AfterModel stream: the plan is settled once, then chunks go one by one. */
  openStream(request: StreamRequest): Promise<Stream> {
    return new Promise((resolve, reject) => {
      const id = this.allocateId();
      const stream = new Stream(this, id);
      this.start({
        message: { type: "stream_open", event: "AfterModel", ...request, id },
        resend: false,
        sentOn: null,
        onMessage: (message) => {
          if (message.type === "stream_opened") {
            stream.opened(Number(message.hooks), Number(message.generation));
            resolve(stream);
          } else if (message.type === "error" && !stream.isOpen) {
            this.finish(id);
            reject(errorOf(message));
          } else {
            stream.handle(message);
          }
        },
        onLost: (error) => {
          if (stream.isOpen) {
            stream.lost(error);
          } else {
            reject(error);
          }
        },
      });
    });
  }

  // ---- plumbing ----------------------------------------------------------------------

  private allocateId(): number {
    const id = this.nextId;
    this.nextId += 1;
    return id;
  }

  /** Registers a request and writes it when connected (else after the reconnect). */
  private start(pending: Pending): void {
    if (this.closed) {
      pending.onLost(new ConnectionLostError("the client was closed"));
      return;
    }
    this.pending.set(pending.message.id, pending);
    const connection = this.connection;
    if (connection) {
      pending.sentOn = connection;
      connection.socket.write(encodeFrame(pending.message));
    } else if (this.options.reconnect) {
      void this.ensureConnected(true).catch(() => undefined);
    } else {
      this.pending.delete(pending.message.id);
      pending.onLost(new ConnectionLostError("not connected to hookd"));
    }
  }

  /** Ends a request: its id is free again. */
  finish(id: number): void {
    this.pending.delete(id);
  }

  /** Forgets a watch (called by {@link HookedEventsWatch.close}). */
  forgetWatch(cwd: string, id: number): void {
    if (this.watches.get(cwd)?.id === id) {
      this.watches.delete(cwd);
    }
  }

  /**
   * Writes a frame of an in-flight request (a stream's chunk or close) on the connection
   * the request was sent on; `false` when that connection is gone.
   */
  writeFor(id: number, message: JsonObject): boolean | Promise<void> {
    const pending = this.pending.get(id);
    const connection = this.connection;
    if (!pending || !connection || pending.sentOn !== connection) {
      return false;
    }
    if (!connection.socket.write(encodeFrame(message))) {
      // Bounded: wait until the socket's buffer drains before the caller sends more.
      return new Promise((resolve) => connection.socket.once("drain", resolve));
    }
    return true;
  }

  private failAll(error: Error): void {
    const lost = [...this.pending.values()];
    this.pending.clear();
    for (const pending of lost) {
      pending.onLost(error);
    }
  }

  /** The current connection, or a new one (retried until the reconnect deadline). */
  private ensureConnected(retry: boolean, timeoutMs = this.options.reconnectTimeoutMs): Promise<Connection> {
    if (this.connection) {
      return Promise.resolve(this.connection);
    }
    if (!this.connecting) {
      this.connecting = this.connectLoop(retry, timeoutMs).then(
        (connection) => {
          this.connecting = null;
          this.adopt(connection);
          return connection;
        },
        (error: unknown) => {
          this.connecting = null;
          this.failAll(error instanceof Error ? error : new ConnectionLostError(String(error)));
          throw error;
        },
      );
    }
    return this.connecting;
  }

  private async connectLoop(retry: boolean, timeoutMs: number): Promise<Connection> {
    const deadline = Date.now() + timeoutMs;
    let delay = 10;
    for (;;) {
      try {
        return await this.open();
      } catch (error) {
        const retryable = retry && isRetryable(error) && Date.now() + delay < deadline && !this.closed;
        if (!retryable) {
          throw error instanceof Error ? error : new Error(String(error));
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 250);
      }
    }
  }

  /** Opens a socket, checks it, and does the handshake. */
  private open(): Promise<Connection> {
    checkSocketPath(this.socketPath);
    return new Promise((resolve, reject) => {
      const socket = createConnection({ path: this.socketPath });
      const decoder = new FrameDecoder(1024 * 1024);
      let settled = false;
      const timer = setTimeout(() => {
        fail(Object.assign(new Error("hookd did not answer hello in time"), { code: "ETIMEDOUT" }));
      }, this.options.handshakeTimeoutMs);
      const fail = (error: Error): void => {
        if (settled) {
          return;
        }
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        reject(error);
      };
      socket.once("error", fail);
      socket.once("close", () => fail(Object.assign(new Error("hookd closed the connection during the handshake"), { code: "ECONNRESET" })));
      socket.on("data", (data: Buffer) => {
        if (settled) {
          return;
        }
        let bodies: Buffer[];
        try {
          bodies = decoder.push(data);
        } catch (error) {
          fail(error as Error);
          return;
        }
        const first = bodies[0];
        if (!first) {
          return;
        }
        const hello = JSON.parse(first.toString("utf8")) as ServerMessage;
        if (hello.type === "error") {
          fail(errorOf(hello));
          return;
        }
        if (hello.type !== "hello" || hello.protocol !== PROTOCOL_VERSION) {
          fail(new HookdError("unsupported_version", `unexpected handshake answer ${JSON.stringify(hello)}`));
          return;
        }
        settled = true;
        clearTimeout(timer);
        socket.removeAllListeners();
        decoder.maxFrameBytes = Number(hello.max_frame_bytes) || DEFAULT_MAX_FRAME_BYTES;
        const connection: Connection = { socket, decoder, hello: hello as unknown as ServerHello };
        resolve(connection);
        // Frames that came with the hello.
        for (const body of bodies.slice(1)) {
          this.dispatch(body);
        }
      });
      socket.write(
        encodeFrame({
          type: "hello",
          protocol: PROTOCOL_VERSION,
          client: this.options.client,
          ...(this.options.env === null ? {} : { env: this.options.env }),
        }),
      );
    });
  }

  /** Makes a fresh connection current and sends what is pending on it. */
  private adopt(connection: Connection): void {
    if (this.closed) {
      connection.socket.destroy();
      return;
    }
    this.connection = connection;
    connection.socket.on("data", (data: Buffer) => {
      let bodies: Buffer[];
      try {
        bodies = connection.decoder.push(data);
      } catch {
        connection.socket.destroy();
        return;
      }
      for (const body of bodies) {
        this.dispatch(body);
      }
    });
    connection.socket.on("error", () => undefined);
    connection.socket.on("close", () => this.lost(connection));
    for (const [id, pending] of [...this.pending]) {
      if (pending.sentOn === connection) {
        continue;
      }
      if (pending.sentOn !== null && !pending.resend) {
        this.pending.delete(id);
        pending.onLost(new ConnectionLostError("the connection to hookd was lost"));
        continue;
      }
      pending.sentOn = connection;
      connection.socket.write(encodeFrame(pending.message));
    }
  }

  /** A connection closed: reconnect if anything waits, else on the next request. */
  private lost(connection: Connection): void {
    if (this.connection !== connection) {
      return;
    }
    this.connection = null;
    if (this.closed) {
      return;
    }
    if (!this.options.reconnect) {
      this.failAll(new ConnectionLostError("the connection to hookd was lost"));
      return;
    }
    if (this.pending.size > 0) {
      void this.ensureConnected(true).catch(() => undefined);
    }
  }

  private dispatch(body: Buffer): void {
    let message: ServerMessage;
    try {
      message = JSON.parse(body.toString("utf8")) as ServerMessage;
    } catch {
      return;
    }
    for (const listener of this.taps) {
      listener(message);
    }
    if (typeof message.id !== "number") {
      return;
    }
    const pending = this.pending.get(message.id);
    if (!pending) {
      return;
    }
    if (message.type === "error" && message.code === "shutting_down" && pending.resend && this.options.reconnect) {
      // Nothing of it ran: it goes to the next daemon once this connection closes.
      pending.sentOn = null;
      return;
    }
    pending.onMessage(message);
  }
}

/** Answers that are not a request's last. */
function isNonFinal(type: string): boolean {
  return type === "hook_result" || type === "subscribed" || type === "registry_changed" || type === "stream_opened" || type === "chunk_result";
}

/** Connection failures worth retrying: no daemon yet, or one going away. */
function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === "ENOENT" || code === "ECONNREFUSED" || code === "ECONNRESET" || code === "EPIPE" || code === "ETIMEDOUT" || code === "shutting_down";
}

/** A subscription to registry changes. */
export class Subscription {
  constructor(
    private readonly client: HookdClient,
    /** The subscription's request id. */
    readonly id: number,
  ) {}

  /** Ends the subscription. */
  async cancel(): Promise<void> {
    await this.client.cancel(this.id);
    this.client.finish(this.id);
  }
}

/** The latest list of a project's hooked events, kept current by the daemon. */
export class HookedEventsWatch {
  /** The events with at least one enabled hook. */
  events = new Set<string>();
  /** The registry generation the list describes. */
  generation = 0;
  /** Resolves once the first answer is in. */
  readonly ready: Promise<HookedEventsWatch>;
  private resolveReady!: (watch: HookedEventsWatch) => void;
  private rejectReady!: (error: Error) => void;
  private listeners: ((watch: HookedEventsWatch) => void)[] = [];

  constructor(
    private readonly client: HookdClient,
    /** The `hooked_events` request's id. */
    readonly id: number,
    /** The project directory. */
    readonly cwd: string,
  ) {
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    // A failure before the first answer is reported through `ready`; none is left unhandled.
    this.ready.catch(() => undefined);
  }

  /** Whether any hook listens to `event`. */
  isHooked(event: string): boolean {
    return this.events.has(event);
  }

  /** Calls `listener` after each update. */
  onChange(listener: (watch: HookedEventsWatch) => void): void {
    this.listeners.push(listener);
  }

  /** Stops watching. */
  async close(): Promise<void> {
    this.client.forgetWatch(this.cwd, this.id);
    await this.client.cancel(this.id);
    this.client.finish(this.id);
  }

  /** @internal */
  update(answer: HookedEvents): void {
    this.events = new Set(answer.events);
    this.generation = answer.generation;
    this.resolveReady(this);
    for (const listener of this.listeners) {
      listener(this);
    }
  }

  /** @internal */
  fail(error: Error): void {
    this.rejectReady(error);
  }
}

/** An open AfterModel stream. */
export class Stream {
  /** How many hooks run on each chunk (0: chunks are answered at once, unchanged). */
  hooks = 0;
  /** The registry generation the stream is pinned to. */
  generation = 0;
  private open = false;
  private nextSeq = 0;
  private readonly waiting: { seq: number; resolve: (result: ChunkResult) => void; reject: (error: Error) => void }[] = [];
  private ending: { resolve: (end: StreamEnd) => void; reject: (error: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(
    private readonly client: HookdClient,
    /** The stream's id. */
    readonly id: number,
  ) {}

  /** Whether `stream_opened` came. */
  get isOpen(): boolean {
    return this.open;
  }

  /**
   * Sends one chunk (`llm_response`, in the hook format or as a Gemini API chunk) and
   * resolves with its result. Chunks may be sent without waiting; results come in order.
   */
  async send(llmResponse: JsonObject): Promise<ChunkResult> {
    if (this.failure) {
      throw this.failure;
    }
    if (this.ending) {
      throw new Error("the stream is closing");
    }
    const seq = this.nextSeq;
    this.nextSeq += 1;
    const result = new Promise<ChunkResult>((resolve, reject) => {
      this.waiting.push({ seq, resolve, reject });
    });
    const written = this.client.writeFor(this.id, { type: "chunk", id: this.id, seq, llm_response: llmResponse });
    if (written === false) {
      this.lost(new ConnectionLostError("the stream's connection was lost"));
    } else if (written !== true) {
      await written;
    }
    return result;
  }

  /** Ends the stream once its chunks are answered; resolves with what the filters held back. */
  close(): Promise<StreamEnd> {
    return this.end({ type: "stream_close", id: this.id });
  }

  /** Cancels the stream: running hooks stop, the chunks sent are answered, the stream ends. */
  cancel(): Promise<StreamEnd> {
    const ended = this.end(null);
    void this.client.cancel(this.id).catch(() => undefined);
    return ended;
  }

  private end(message: JsonObject | null): Promise<StreamEnd> {
    if (this.failure) {
      return Promise.reject(this.failure);
    }
    if (this.ending) {
      return Promise.reject(new Error("the stream is already closing"));
    }
    const ended = new Promise<StreamEnd>((resolve, reject) => {
      this.ending = { resolve, reject };
    });
    if (message && this.client.writeFor(this.id, message) === false) {
      this.lost(new ConnectionLostError("the stream's connection was lost"));
    }
    return ended;
  }

  /** @internal */
  opened(hooks: number, generation: number): void {
    this.open = true;
    this.hooks = hooks;
    this.generation = generation;
  }

  /** @internal Handles a frame of the stream after `stream_opened`. */
  handle(message: ServerMessage): void {
    if (message.type === "chunk_result") {
      const index = this.waiting.findIndex((entry) => entry.seq === message.seq);
      const [entry] = index >= 0 ? this.waiting.splice(index, 1) : [];
      entry?.resolve({
        seq: Number(message.seq),
        ...(typeof message.content === "string" ? { content: message.content } : {}),
        result: toResult((message.result ?? {}) as JsonObject),
      });
    } else if (message.type === "stream_closed") {
      this.client.finish(this.id);
      const error = new Error("the stream closed before this chunk was answered");
      for (const entry of this.waiting.splice(0)) {
        entry.reject(error);
      }
      const end = { chunks: Number(message.chunks), flush: String(message.flush ?? "") };
      if (this.ending) {
        this.ending.resolve(end);
      } else {
        this.ending = { resolve: () => undefined, reject: () => undefined };
        this.failure = new Error("the daemon ended the stream");
      }
    } else if (message.type === "error") {
      // An error about one frame of the stream: the oldest chunk waiting.
      this.waiting.shift()?.reject(errorOf(message));
    }
  }

  /** @internal The connection was lost: the stream's state in the daemon is gone. */
  lost(error: Error): void {
    this.failure = error;
    this.client.finish(this.id);
    for (const entry of this.waiting.splice(0)) {
      entry.reject(error);
    }
    this.ending?.reject(error);
  }
}
