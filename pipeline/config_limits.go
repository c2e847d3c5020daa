package pipeline

import (
	"fmt"
	"runtime"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Limits of a config document. Every config goes through parseDocument
// (submits, doctor, the server's defaults, templates), so these hold for all
// of them. They are checked before the YAML parser runs, or while the JSON
// parser does, because the parser's own cost is what a hostile document
// attacks: goccy/go-yaml builds a path string per key (quadratic in depth),
// parses a block mapping's keys in time quadratic in their number, and
// documents in time quadratic in their count. Within these limits a config
// of any size the body limit lets through parses in a few tens of MiB and
// well under a second; past them it is refused with the limit named.
const (
	// MaxConfigDepth bounds nesting (mappings and sequences inside each
	// other).
	MaxConfigDepth = 200
	// MaxConfigValues bounds the values a document holds, YAML aliases
	// expanded.
	MaxConfigValues = 100_000
	// MaxConfigTokens bounds a YAML document's tokens (keys, values,
	// indicators such as ":" "-" "[" and comments), counted from the text
	// before it is parsed. The count errs on the high side: a word of a
	// quoted string or of a comment counts as one.
	MaxConfigTokens = 65_536
	// MaxConfigMappingKeys bounds the keys of one YAML block mapping.
	MaxConfigMappingKeys = 5_000
	// MaxConfigDocuments bounds the "---" documents of a YAML text (a
	// config is one document; empty ones around it are allowed).
	MaxConfigDocuments = 16
	// MaxConfigPathBytes bounds the combined length of the paths that lead
	// to every key and item (such as "pipeline.source.config.table").
	MaxConfigPathBytes = 8 << 20
)

// entryPathLen is what a sequence item adds to its path ("[123]"), counted
// generously.
const entryPathLen = 10

// parseSlots bounds how many documents are parsed at once. Parsing is pure
// CPU, so more parses than processors only add their memory together.
var parseSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// limitError is the problem of a document past one of the limits.
func limitError(what string, limit int) *ConfigError {
	return &ConfigError{Message: fmt.Sprintf("config exceeds the limit of %d %s", limit, what)}
}

// yamlTokenBound returns an upper bound of the tokens goccy/go-yaml's lexer
// makes of src, stopping once it passes limit. A token is an indicator
// character or starts a run of other non-blank characters (after a blank
// or an indicator); the exceptions, an indenting tab, a block scalar's
// content (which may be empty) and what follows a "..." are counted with
// the tab, the "|" or ">", and the "." before them. The bound holds whatever the text means; quoting and
// comments only make it count more.
func yamlTokenBound(src []byte, limit int) int {
	n := 0
	inRun := false
	for _, c := range src {
		switch c {
		case ' ', '\r', '\n':
			inRun = false
		case '\t':
			// A blank, except in indentation, where it is a token of its own
			// (an invalid one).
			n++
			inRun = false
		case '[', ']', '{', '}', ',', ':', '-', '?', '&', '*', '!', '#', '\'', '"', '%', '@', '`':
			n++
			inRun = false
		case '|', '>':
			// A block scalar's header, and its content (which may be empty).
			n += 2
			inRun = false
		case '.':
			// "..." ends a document and may run into the next token.
			if !inRun {
				n += 2
				inRun = true
			}
		default:
			if !inRun {
				n++
				inRun = true
			}
		}
		if n > limit {
			break
		}
	}
	return n
}

// lexYAML tokenizes src after checking the bound of its token count, then
// checks the shape of the tokens (documents, nesting, keys per mapping,
// path lengths) the parser would otherwise pay for.
func lexYAML(src []byte) (token.Tokens, *ConfigError) {
	if yamlTokenBound(src, MaxConfigTokens) > MaxConfigTokens {
		return nil, limitError("YAML tokens (keys, values, indicators and comments)", MaxConfigTokens)
	}
	tokens := lexer.Tokenize(string(src))
	if cerr := checkYAMLShape(tokens); cerr != nil {
		return nil, cerr
	}
	return tokens, nil
}

// shapeFrame is one open collection while checkYAMLShape walks the tokens.
type shapeFrame struct {
	// col is the column of a block collection's entries; flow collections
	// have flowCol and end at their closing bracket only.
	col int
	seq bool
	// base is the path length of the collection, child that of its
	// current entry.
	base, child int
	entries     int
	// keyed: the current entry of a flow collection has had its key.
	keyed bool
}

const (
	flowCol = -1
	rootCol = -2
)

// checkYAMLShape follows the block structure by columns and the flow
// structure by brackets, as YAML defines them, and refuses a document past
// the limits on documents, nesting, keys per block mapping and path bytes.
// It only has to agree with the parser well enough to bound its cost: a
// text the parser reads differently fails to parse anyway.
func checkYAMLShape(tokens token.Tokens) *ConfigError {
	root := shapeFrame{col: rootCol, base: 1, child: 1}
	stack := []shapeFrame{root}
	docs, pathBytes := 0, 0
	push := func(f shapeFrame) *ConfigError {
		stack = append(stack, f)
		if len(stack)-1 > MaxConfigDepth {
			return &ConfigError{Message: fmt.Sprintf("config nests deeper than %d levels", MaxConfigDepth)}
		}
		return nil
	}
	// entry starts a new item of the top collection, costing its path.
	entry := func(extra int) *ConfigError {
		top := &stack[len(stack)-1]
		top.child = top.base + extra
		pathBytes += top.child
		if pathBytes > MaxConfigPathBytes {
			return limitError("bytes of key paths", MaxConfigPathBytes)
		}
		return nil
	}
	next := func(i int) *token.Token {
		for j := i + 1; j < len(tokens); j++ {
			if tokens[j].Type != token.CommentType {
				return tokens[j]
			}
		}
		return nil
	}
	for i := 0; i < len(tokens); i++ {
		tk := tokens[i]
		top := &stack[len(stack)-1]
		inFlow := top.col == flowCol
		var cerr *ConfigError
		switch tk.Type {
		case token.CommentType:
			continue
		case token.DocumentHeaderType:
			docs++
			if docs > MaxConfigDocuments {
				return limitError("YAML documents", MaxConfigDocuments)
			}
			stack = append(stack[:0], root)
			continue
		case token.SequenceStartType, token.MappingStartType:
			if inFlow && !top.keyed {
				cerr = entry(entryPathLen)
			}
			if cerr == nil {
				cerr = push(shapeFrame{col: flowCol, base: stack[len(stack)-1].child, child: stack[len(stack)-1].child})
			}
		case token.SequenceEndType, token.MappingEndType:
			for len(stack) > 1 {
				popped := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if popped.col == flowCol {
					break
				}
			}
		case token.CollectEntryType:
			if inFlow {
				top.keyed = false
			}
		case token.SequenceEntryType:
			if inFlow {
				break
			}
			col := tk.Position.Column
			for stack[len(stack)-1].col > col {
				stack = stack[:len(stack)-1]
			}
			if t := &stack[len(stack)-1]; t.col == col && t.seq {
				t.entries++
			} else {
				cerr = push(shapeFrame{col: col, seq: true, base: t.child, child: t.child})
			}
			if cerr == nil {
				cerr = entry(entryPathLen)
			}
		case token.MappingValueType:
		default:
			n := next(i)
			isKey := n != nil && n.Type == token.MappingValueType
			switch {
			case isKey && inFlow:
				top.keyed = true
				// The parser builds a key's path twice.
				cerr = entry(2 * (len(tk.Value) + 3))
			case isKey:
				col := tk.Position.Column
				for t := stack[len(stack)-1]; t.col > col || (t.col == col && t.seq); t = stack[len(stack)-1] {
					stack = stack[:len(stack)-1]
				}
				if t := &stack[len(stack)-1]; t.col == col {
					t.entries++
					if t.entries > MaxConfigMappingKeys {
						return limitError("keys in one YAML mapping", MaxConfigMappingKeys)
					}
				} else {
					cerr = push(shapeFrame{col: col, base: t.child, child: t.child, entries: 1})
				}
				if cerr == nil {
					cerr = entry(2 * (len(tk.Value) + 3))
				}
			case inFlow && !top.keyed && tk.Type != token.AnchorType && tk.Type != token.TagType:
				cerr = entry(entryPathLen)
			}
		}
		if cerr != nil {
			return cerr
		}
	}
	return nil
}
