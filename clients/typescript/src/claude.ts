// The Claude Agent SDK adapter: the SDK's `hooks` option, wired to hookd. Each hook callback
// translates the SDK's input (Claude Code's hook language) into a hookd event, fires it over
// one shared connection, and translates the hooks' merged answer back (docs/dialects.md has
// the mappings). The SDK itself is not imported: the option is plain data and functions.

import { HookdClient, type ConnectOptions } from "./client.js";
import type { EventResult, JsonObject } from "./types.js";

/** Claude Code's events the adapter wires, with the hookd event each becomes. */
export const CLAUDE_EVENTS: Record<string, string> = {
  PreToolUse: "BeforeTool",
  PostToolUse: "AfterTool",
  UserPromptSubmit: "BeforeAgent",
  Stop: "AfterAgent",
  SubagentStop: "AfterAgent",
  SessionStart: "SessionStart",
  SessionEnd: "SessionEnd",
  PreCompact: "PreCompress",
  Notification: "Notification",
};

const TOOLS: Record<string, string> = {
  Bash: "run_shell_command",
  Edit: "replace",
  MultiEdit: "replace",
  Read: "read_file",
  Write: "write_file",
  Glob: "glob",
  Grep: "grep_search",
  LS: "list_directory",
  WebFetch: "web_fetch",
  WebSearch: "google_web_search",
  TodoWrite: "write_todos",
};

/** `tool_input` keys renamed per Claude tool: Claude's key → Gemini's. */
const INPUT_KEYS: Record<string, Record<string, string>> = {
  Bash: { run_in_background: "is_background" },
  Edit: { replace_all: "allow_multiple" },
  Glob: { path: "dir_path" },
  Grep: { path: "dir_path", glob: "include_pattern" },
  LS: { path: "dir_path" },
};

/** Gemini CLI's name of a Claude Code tool. */
export function claudeToolToGemini(tool: string): string {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(tool);
  if (mcp) {
    return `mcp_${mcp[1]}_${mcp[2]}`;
  }
  return TOOLS[tool] ?? tool;
}

function renameKeys(input: JsonObject, renames: Record<string, string> | undefined): JsonObject {
  if (!renames) {
    return { ...input };
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(input)) {
    const renamed = renames[key];
    out[renamed && !(renamed in input) ? renamed : key] = value;
  }
  return out;
}

/** A Claude tool's input in Gemini CLI's words. */
export function claudeToolInputToGemini(tool: string, input: JsonObject): JsonObject {
  const out = renameKeys(input, INPUT_KEYS[tool]);
  if (tool === "TodoWrite" && Array.isArray(out.todos)) {
    out.todos = out.todos.map((todo) =>
      todo && typeof todo === "object" ? renameKeys(todo as JsonObject, { content: "description" }) : todo,
    );
  }
  return out;
}

/** A Gemini tool input (as a hook rewrote it) back in Claude Code's words. */
export function geminiToolInputToClaude(claudeTool: string, input: JsonObject): JsonObject {
  const renames = INPUT_KEYS[claudeTool];
  const back = renames ? Object.fromEntries(Object.entries(renames).map(([claude, gemini]) => [gemini, claude])) : undefined;
  const out = renameKeys(input, back);
  if (claudeTool === "TodoWrite" && Array.isArray(out.todos)) {
    out.todos = out.todos.map((todo) =>
      todo && typeof todo === "object" ? renameKeys(todo as JsonObject, { description: "content" }) : todo,
    );
  }
  return out;
}

const BASE_FIELDS = ["session_id", "transcript_path", "cwd", "hook_event_name", "tool_name", "tool_input", "tool_response", "last_assistant_message", "notification_type"];

/**
 * The hookd event for an SDK hook input: the event's name and its `input` fields in Gemini
 * CLI's words, with `claude_event` (and the original tool name, input and response) kept as
 * `claude_*` fields so that hooks written for Claude Code read exactly what the SDK sent.
 * `null` for an event hookd has no counterpart for.
 */
export function claudeInputToEvent(input: JsonObject): { event: string; input: JsonObject } | null {
  const claudeEvent = String(input.hook_event_name ?? "");
  const event = CLAUDE_EVENTS[claudeEvent];
  if (!event) {
    return null;
  }
  const out: JsonObject = { claude_event: claudeEvent };
  for (const [key, value] of Object.entries(input)) {
    if (!BASE_FIELDS.includes(key)) {
      out[key] = value;
    }
  }
  if (typeof input.tool_name === "string") {
    const tool = input.tool_name;
    out.tool_name = claudeToolToGemini(tool);
    out.claude_tool_name = tool;
    if (input.tool_input && typeof input.tool_input === "object") {
      out.tool_input = claudeToolInputToGemini(tool, input.tool_input as JsonObject);
      out.claude_tool_input = input.tool_input;
    }
  }
  if ("tool_response" in input) {
    const response = input.tool_response;
    const text = typeof response === "string" ? response : JSON.stringify(response);
    out.tool_response = { llmContent: text, returnDisplay: text };
    out.claude_tool_response = response;
  }
  if (typeof input.last_assistant_message === "string") {
    out.prompt_response = input.last_assistant_message;
  }
  if (typeof input.notification_type === "string") {
    out.notification_type = input.notification_type === "permission_prompt" ? "ToolPermission" : input.notification_type;
  }
  return { event, input: out };
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * What the SDK expects back from a hook callback, for the merged output of hookd's hooks
 * (as `hookctl relay --dialect claude` answers Claude Code, as an object instead of stdout).
 */
export function answerForClaude(claudeInput: JsonObject, result: Pick<EventResult, "final_output" | "errors">): JsonObject {
  const claudeEvent = String(claudeInput.hook_event_name ?? "");
  const merged = (result.final_output ?? {}) as JsonObject;
  const specific = (merged.hookSpecificOutput ?? {}) as JsonObject;
  const decision = merged.decision;
  const blocked = decision === "deny" || decision === "block";
  const reason = text(merged.stopReason) ?? text(merged.reason) ?? "No reason provided";
  const out: JsonObject = {};
  if (merged.continue === false) {
    out.continue = false;
    const stopReason = text(merged.stopReason) ?? text(merged.reason);
    if (stopReason) {
      out.stopReason = stopReason;
    }
  }
  if (merged.suppressOutput === true) {
    out.suppressOutput = true;
  }
  const messages = [text(merged.systemMessage), ...result.errors.map((error) => `hookd: ${error}`)].filter(Boolean);
  if (messages.length > 0) {
    out.systemMessage = messages.join("\n");
  }
  const claudeSpecific: JsonObject = {};
  if (claudeEvent === "PreToolUse") {
    if (blocked) {
      claudeSpecific.permissionDecision = "deny";
      claudeSpecific.permissionDecisionReason = reason;
    } else if (decision === "ask") {
      claudeSpecific.permissionDecision = "ask";
      const askReason = text(merged.reason) ?? text(merged.systemMessage);
      if (askReason) {
        claudeSpecific.permissionDecisionReason = askReason;
      }
    } else if (specific.permissionDecision === "allow") {
      claudeSpecific.permissionDecision = "allow";
      if (text(merged.reason)) {
        claudeSpecific.permissionDecisionReason = merged.reason;
      }
    }
    if (specific.tool_input && typeof specific.tool_input === "object") {
      const tool = typeof claudeInput.tool_name === "string" ? claudeInput.tool_name : "";
      claudeSpecific.updatedInput = geminiToolInputToClaude(tool, specific.tool_input as JsonObject);
    }
  } else if (blocked && ["PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "PreCompact"].includes(claudeEvent)) {
    out.decision = "block";
    out.reason = reason;
  }
  if (["PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart"].includes(claudeEvent) && text(specific.additionalContext)) {
    claudeSpecific.additionalContext = specific.additionalContext;
  }
  if (Object.keys(claudeSpecific).length > 0) {
    out.hookSpecificOutput = { hookEventName: claudeEvent, ...claudeSpecific };
  }
  return out;
}

/** How {@link hookdHooks} reaches hookd and what it does when it cannot. */
export interface HookdHooksOptions {
  /** The project directory hookd reads the project's hooks for (default: each input's `cwd`). */
  projectDir?: string;
  /** A client to use; default: one connected with `connect`. */
  client?: HookdClient;
  /** How to connect when no client is given. */
  connect?: ConnectOptions;
  /** Which Claude events to wire (default: every one in {@link CLAUDE_EVENTS}). */
  events?: string[];
  /**
   * What a hook callback answers when hookd cannot be reached or fails: `allow` (nothing,
   * the default) or `deny` (a tool call is refused, a prompt blocked, naming hookd).
   */
  unreachable?: "allow" | "deny";
  /**
   * Set when the agent also runs the hooks of Claude Code's settings files itself (SDK
   * `settingSources`): hookd then skips its copies of them (`relayed_by: "claude"`).
   */
  agentRunsClaudeSettings?: boolean;
}

/** A hook callback, as the SDK calls it. */
export type SdkHookCallback = (input: JsonObject, toolUseID: string | undefined, options: { signal: AbortSignal }) => Promise<JsonObject>;

/** The SDK's `hooks` option. */
export type SdkHooks = Record<string, { matcher?: string; hooks: SdkHookCallback[] }[]>;

/**
 * The Claude Agent SDK's `hooks` option wired to hookd: pass it as `options.hooks` to
 * `query()`. The user's hookd hooks (Gemini CLI's, hookd's and Claude-dialect ones) run for
 * the agent's events in the daemon, with no process per event; events no hook listens to are
 * answered without a round trip.
 */
export async function hookdHooks(options: HookdHooksOptions = {}): Promise<SdkHooks> {
  const client = options.client ?? (await HookdClient.connect(options.connect));
  if (options.projectDir) {
    // Keeps the hooked events current, so unhooked ones cost nothing.
    await client.watchHookedEvents(options.projectDir);
  }
  const callback: SdkHookCallback = async (input, _toolUseID, { signal }) => {
    const translated = claudeInputToEvent(input);
    if (!translated) {
      return {};
    }
    const cwd = typeof input.cwd === "string" && input.cwd.startsWith("/") ? input.cwd : (options.projectDir ?? process.cwd());
    try {
      const result = await client.fire(
        {
          event: translated.event,
          cwd,
          input: translated.input,
          session_id: typeof input.session_id === "string" ? input.session_id : "",
          transcript_path: typeof input.transcript_path === "string" ? input.transcript_path : "",
          ...(options.projectDir ? { project_dir: options.projectDir } : {}),
          ...(options.agentRunsClaudeSettings ? { relayed_by: "claude" as const } : {}),
        },
        { signal },
      );
      return answerForClaude(input, result);
    } catch (error) {
      if (options.unreachable !== "deny") {
        return {};
      }
      const reason = `hookd could not be reached: ${String(error)}`;
      return answerForClaude(input, { final_output: { decision: "deny", reason, continue: input.hook_event_name === "Stop" ? false : undefined }, errors: [] });
    }
  };
  const hooks: SdkHooks = {};
  for (const event of options.events ?? Object.keys(CLAUDE_EVENTS)) {
    hooks[event] = [{ hooks: [callback] }];
  }
  return hooks;
}
