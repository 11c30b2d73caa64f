package testenv

import (
	"context"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// relayHooks are what a proxy in front of the emulator does with what passes through it: onCall
// when a call starts, onRequest for each request message, onAnswer for each answer message (before
// it is passed on) and onEnd when the call's answers ended well. Any may be nil.
type relayHooks struct {
	onCall    func(method string)
	onRequest func(method string, m []byte)
	onAnswer  func(method string, m []byte)
	onEnd     func(method string)
}

// relay is a gRPC handler that relays every call, raw bytes in both directions, to conn (the
// emulator), with its metadata, calling h on the way: the one proxy OpCounter and QueryRecorder
// share.
func relay(conn *grpc.ClientConn, h relayHooks) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(ss)
		md, _ := metadata.FromIncomingContext(ss.Context())
		out := metadata.MD{}
		for k, v := range md {
			if !strings.HasPrefix(k, ":") && k != "content-type" && k != "user-agent" && !strings.HasPrefix(k, "grpc-") {
				out[k] = v
			}
		}
		ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ss.Context(), out))
		defer cancel()
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err != nil {
			return err
		}
		if h.onCall != nil {
			h.onCall(method)
		}
		go func() {
			for {
				var m []byte
				if err := ss.RecvMsg(&m); err != nil {
					_ = cs.CloseSend()
					return
				}
				if h.onRequest != nil {
					h.onRequest(method, m)
				}
				if err := cs.SendMsg(&m); err != nil {
					return
				}
			}
		}()
		for first := true; ; first = false {
			var m []byte
			err := cs.RecvMsg(&m)
			if first {
				if hd, herr := cs.Header(); herr == nil {
					_ = ss.SendHeader(hd)
				}
			}
			if err == io.EOF {
				if h.onEnd != nil {
					h.onEnd(method)
				}
				ss.SetTrailer(cs.Trailer())
				return nil
			}
			if err != nil {
				ss.SetTrailer(cs.Trailer())
				return err
			}
			if h.onAnswer != nil {
				h.onAnswer(method, m)
			}
			if err := ss.SendMsg(&m); err != nil {
				return err
			}
		}
	}
}
