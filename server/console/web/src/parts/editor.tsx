// The YAML editor (CodeMirror 6): highlighting, line numbers, undo, and the
// config's problems marked at their lines.
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { yaml } from "@codemirror/lang-yaml";
import { bracketMatching, defaultHighlightStyle, foldGutter, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { lintGutter, setDiagnostics, type Diagnostic } from "@codemirror/lint";
import { EditorSelection, EditorState } from "@codemirror/state";
import { drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from "@codemirror/view";
import { useEffect, useImperativeHandle, useRef } from "preact/hooks";
import type { Ref } from "preact";

/** One problem of a config, located in the editor's document. */
export interface Problem {
  message: string;
  path?: string | undefined;
  line?: number | undefined;
  column?: number | undefined;
  severity?: "error" | "warning";
}

/** What a page can do with its editor. */
export interface EditorHandle {
  value(): string;
  setValue(text: string): void;
  /** Marks problems at their lines (and clears earlier marks). */
  mark(problems: Problem[]): void;
  /** Puts the cursor at a line and column and focuses the editor. */
  reveal(line: number, column?: number): void;
}

export function Editor(props: {
  initial: string;
  label: string;
  onChange?: (text: string) => void;
  readOnly?: boolean;
  handle?: Ref<EditorHandle>;
  minLines?: number;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChange = useRef(props.onChange);
  onChange.current = props.onChange;

  useEffect(() => {
    if (!host.current) return;
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: props.initial,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          foldGutter(),
          lintGutter(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          yaml(),
          keymap.of([...defaultKeymap, ...historyKeymap]),
          EditorView.cspNonce.of(styleNonce()),
          // Long lines wrap: the editor grows instead of scrolling, so
          // every part of it is reached by the keyboard.
          EditorView.lineWrapping,
          EditorState.tabSize.of(2),
          EditorState.readOnly.of(props.readOnly ?? false),
          EditorView.editable.of(!(props.readOnly ?? false)),
          EditorView.contentAttributes.of({ "aria-label": props.label, "aria-multiline": "true", spellcheck: "false" }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChange.current?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
  }, []);

  useImperativeHandle(
    props.handle ?? null,
    () => ({
      value: () => view.current?.state.doc.toString() ?? "",
      setValue: (text: string) => {
        const v = view.current;
        if (v) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: text } });
      },
      mark: (problems: Problem[]) => {
        const v = view.current;
        if (!v) return;
        const doc = v.state.doc;
        const diagnostics: Diagnostic[] = problems.map((p) => {
          if (p.line === undefined || p.line < 1 || p.line > doc.lines) {
            return { from: 0, to: 0, severity: p.severity ?? "error", message: label(p) };
          }
          const line = doc.line(p.line);
          const from = Math.min(line.to, line.from + Math.max(0, (p.column ?? 1) - 1));
          return { from, to: Math.max(from, line.to), severity: p.severity ?? "error", message: label(p) };
        });
        v.dispatch(setDiagnostics(v.state, diagnostics));
      },
      reveal: (line: number, column = 1) => {
        const v = view.current;
        if (!v) return;
        const doc = v.state.doc;
        const l = doc.line(Math.min(Math.max(1, line), doc.lines));
        const pos = Math.min(l.to, l.from + Math.max(0, column - 1));
        v.dispatch({ selection: EditorSelection.cursor(pos), scrollIntoView: true });
        v.focus();
      },
    }),
    [],
  );

  return <div class="editor" ref={host} style={{ "--min-lines": String(props.minLines ?? 16) }} />;
}

/**
 * The nonce the shell's CSP allows style elements with: CodeMirror adds its
 * styles as a <style> element, which the CSP refuses without it.
 */
function styleNonce(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="faucet-style-nonce"]')?.content ?? "";
}

function label(p: Problem): string {
  return p.path ? `${p.path}: ${p.message}` : p.message;
}

/**
 * The problems of a 400 bad_config: its details.problems when the server
 * sent them, else one per line of the message ("line 3, column 12: …").
 */
export function problemsOf(details: unknown, message: string): Problem[] {
  const list = (details as { problems?: unknown } | undefined)?.problems;
  if (Array.isArray(list)) {
    return list
      .filter((p): p is Record<string, unknown> => typeof p === "object" && p !== null && typeof p.message === "string")
      .map((p) => {
        // A problem of the server's default config has no place in this
        // document.
        const here = p.file === undefined && p.set === undefined;
        return {
          message: here ? (p.message as string) : `in the server's default config: ${p.message as string}`,
          path: typeof p.path === "string" ? p.path : undefined,
          line: here && typeof p.line === "number" ? p.line : undefined,
          column: here && typeof p.column === "number" ? p.column : undefined,
        };
      });
  }
  return message.split("\n").map((text) => {
    const m = /^line (\d+), column (\d+): (.*)$/.exec(text);
    return m ? { line: Number(m[1]), column: Number(m[2]), message: m[3] ?? "" } : { message: text };
  });
}
