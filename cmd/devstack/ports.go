package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// defaultPortBase is the first default port; every default address is an offset from it.
const defaultPortBase = 8080

// maxPortOffset is the largest offset of ports, so that --port-base stays below 65536.
const maxPortOffset = 43

// port is one address flag and where --port-base puts it.
type port struct {
	flag   string
	offset int
	help   string
	field  func(*config) *string
}

var ports = []port{
	{"webhook-addr", 0, "address of the webhook", func(c *config) *string { return &c.webhookAddr }},
	{"worker-addr", 1, "address of the worker", func(c *config) *string { return &c.workerAddr }},
	{"api-addr", 3, "address of the api service (/v1/messages, Embedded Signup)", func(c *config) *string { return &c.apiAddr }},
	{"console-addr", 5, "address of the operators' console", func(c *config) *string { return &c.consoleAddr }},
	{"graph-addr", 10, "address of the fake Graph API", func(c *config) *string { return &c.graphAddr }},
	{"gemini-addr", 14, "address of the fake Vertex AI Gemini (the worker's LLM_BASE_URL)", func(c *config) *string { return &c.geminiAddr }},
	{"action-addr", 15, "address of the fake business action endpoint (the sample tenant's action_url follows it)", func(c *config) *string { return &c.actionAddr }},
	{"tasks-addr", maxPortOffset, "address of the Cloud Tasks emulator (gRPC)", func(c *config) *string { return &c.tasksAddr }},
}

func portAddr(base, offset int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(base+offset))
}

// portOffsets lists the offsets for --help: "webhook +0, worker +1, …".
func portOffsets() string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s +%d", strings.TrimSuffix(p.flag, "-addr"), p.offset)
	}
	return strings.Join(parts, ", ")
}

// checkPorts listens on every address the stack will use and lets go at once, so that a taken
// port is reported before anything starts, with the flag that moves it. A port taken between this
// check and the start still fails, with the listener's error.
func checkPorts(c config) error {
	var errs []error
	seen := map[string]string{}
	for _, p := range ports {
		addr := *p.field(&c)
		if other, ok := seen[addr]; ok && !strings.HasSuffix(addr, ":0") {
			errs = append(errs, fmt.Errorf("--%s and --%s both name %s", other, p.flag, addr))
			continue
		}
		seen[addr] = p.flag
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (--%s) is taken: %w", addr, p.flag, err))
			continue
		}
		ln.Close()
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w; move it with its flag, or all with --port-base N (is another devstack running?)", errors.Join(errs...))
}
