// mnemo-mcp: written by `mnemo-mcp install opencode`; `mnemo-mcp uninstall opencode` removes it.
// opencode has no shell-command hooks, only plugins: this one hands each event to
// `mnemo-mcp hook --client opencode EVENT` (JSON on stdin, as Claude Code's hooks do) and puts
// what it answers in front of the model: recalled notes in the system prompt of the turn, a
// failure seen before after the tool's output, a refusal as the tool's error.
import { spawn } from "node:child_process";

// The program and its first arguments (mnemo-mcp's quick start where the installer could use it).
const MNEMO = __MNEMO_HOOK_ARGV__;
const TIMEOUT_MS = 15000;

function hook(event, payload, cwd) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      const args = [...MNEMO.slice(1), "hook", "--client", "opencode", event];
      child = spawn(MNEMO[0], args, { cwd, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      return resolve(null);
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => resolve(null));
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(out.trim() ? JSON.parse(out) : null);
      } catch {
        resolve(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify({ ...payload, cwd }));
  });
}

const context = (answer) => answer?.hookSpecificOutput?.additionalContext || "";

export const Mnemo = async ({ directory }) => {
  const started = new Map(); // session -> the SessionStart context
  const turn = new Map(); // session -> the prompt's recalled notes
  const answer = new Map(); // session -> { partID: [messageID, text] } of text parts since the prompt
  const assistant = new Set(); // ids of assistant messages

  return {
    "chat.message": async (input, output) => {
      const sid = input.sessionID;
      if (!started.has(sid)) {
        started.set(sid, context(await hook("session.created", { session_id: sid, source: "startup" }, directory)));
      }
      const prompt = (output.parts || []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
      answer.set(sid, {});
      turn.set(sid, context(await hook("chat.message", { session_id: sid, prompt }, directory)));
    },
    "experimental.chat.system.transform": async (input, output) => {
      for (const text of [started.get(input.sessionID), turn.get(input.sessionID)]) {
        if (text) output.system.push(text);
      }
    },
    "tool.execute.before": async (input, output) => {
      const payload = { session_id: input.sessionID, tool_name: input.tool, tool_input: output.args, tool_use_id: input.callID };
      const said = await hook("tool.execute.before", payload, directory);
      const decision = said?.hookSpecificOutput;
      if (decision?.permissionDecision === "deny") throw new Error(decision.permissionDecisionReason || "denied by mnemo");
    },
    "tool.execute.after": async (input, output) => {
      const payload = {
        session_id: input.sessionID,
        tool_name: input.tool,
        tool_input: input.args,
        tool_use_id: input.callID,
        tool_response: output,
      };
      const text = context(await hook("tool.execute.after", payload, directory));
      if (text && typeof output.output === "string") output.output += "\n\n" + text;
    },
    event: async ({ event }) => {
      const props = event.properties || {};
      if (event.type === "message.updated" && props.info?.role === "assistant") assistant.add(props.info.id);
      if (event.type === "message.part.updated" && props.part?.type === "text" && answer.has(props.sessionID)) {
        answer.get(props.sessionID)[props.part.id] = [props.part.messageID, props.part.text];
      }
      if (event.type === "session.idle" && answer.has(props.sessionID)) {
        // Which messages are the assistant's is known by now, whatever order the events came in.
        const parts = Object.values(answer.get(props.sessionID)).filter(([mid]) => assistant.has(mid));
        const text = parts.map(([, t]) => t).join("\n");
        answer.delete(props.sessionID);
        await hook("session.idle", { session_id: props.sessionID, last_assistant_message: text }, directory);
      }
    },
  };
};
