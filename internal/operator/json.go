package operator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// indentJSON encodes v indented, each line after the first prefixed.
func indentJSON(v any, prefix string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode JSON: %w", err)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// WriteJSON writes v as indented JSON followed by a newline, encoded in full before anything is
// written so a failure never leaves half a document.
func WriteJSON(w io.Writer, v any) error {
	s, err := indentJSON(v, "")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, s+"\n")
	return err
}
