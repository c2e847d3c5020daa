package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxAnswerBytes bounds an API answer a tool reads. The operations the
// tools call answer bounded pages; this keeps a hostile or broken server
// from filling the memory of faucet mcp, too.
const maxAnswerBytes = 8 << 20

// outcome is what one tool call came to.
type outcome struct {
	res *sdk.CallToolResult
	// status is the API's HTTP status; 0 when it did not answer.
	status int
	// runID is the run the call read or started.
	runID *string
}

// denied reports whether the API refused the caller's token or role.
func (o outcome) denied() bool {
	return o.status == http.StatusUnauthorized || o.status == http.StatusForbidden
}

// jsonAnswer answers with a JSON document, as text and as structured
// content.
func jsonAnswer(body []byte) outcome {
	body = bytes.TrimSpace(body)
	return outcome{res: &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
	}, status: http.StatusOK}
}

// marshalAnswer answers with v as JSON.
func marshalAnswer(v any) outcome {
	b, err := json.Marshal(v)
	if err != nil {
		return outcome{res: textError("encode the answer: " + err.Error())}
	}
	return jsonAnswer(b)
}

// textError is a tool error the API did not produce.
func textError(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// read returns the body of the API's answer when its status is 2xx, and
// the outcome to answer with otherwise.
func read(resp *http.Response, err error) ([]byte, *outcome) {
	if err != nil {
		return nil, &outcome{res: textError("the faucet API did not answer: " + err.Error())}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, &outcome{res: textError("read the faucet API's answer: " + err.Error()), status: resp.StatusCode}
	}
	if len(body) > maxAnswerBytes {
		return nil, &outcome{res: textError(fmt.Sprintf("the faucet API's answer is larger than %d MiB: ask for less (a smaller limit)", maxAnswerBytes>>20)), status: resp.StatusCode}
	}
	if resp.StatusCode/100 != 2 {
		o := refusal(resp, body)
		return nil, &o
	}
	return body, nil
}

// answer is the outcome of a call whose whole answer is the API's JSON.
func answer(resp *http.Response, err error) outcome {
	body, refused := read(resp, err)
	if refused != nil {
		return *refused
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	return jsonAnswer(body)
}

// problem is the part of the API's problem document a refusal shows.
type problem struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

// refusal is the tool error of an API answer that is not 2xx: the API's
// error code, status and message (a forbidden role says which role the
// operation needs), its details, and when to retry. The structured content
// carries the API's envelope as it is.
func refusal(resp *http.Response, body []byte) outcome {
	var p problem
	if json.Unmarshal(body, &p) != nil || p.Error.Code == "" {
		text := strings.TrimSpace(string(body))
		if len(text) > 512 {
			text = text[:512] + "…"
		}
		return outcome{res: textError(fmt.Sprintf("the faucet API answered %s: %s", resp.Status, text)), status: resp.StatusCode}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d): %s", p.Error.Code, resp.StatusCode, p.Error.Message)
	if len(p.Error.Details) > 0 {
		if d, err := json.Marshal(p.Error.Details); err == nil {
			fmt.Fprintf(&b, "\ndetails: %s", d)
		}
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		fmt.Fprintf(&b, "\nretry after %s s", ra)
	}
	res := textError(b.String())
	res.StructuredContent = map[string]any{"status": resp.StatusCode, "error": p.Error}
	return outcome{res: res, status: resp.StatusCode}
}
