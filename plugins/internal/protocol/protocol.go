// Package protocol holds what both ends of a connector plugin connection
// must agree on: the go-plugin handshake, the protocol versions, and the
// gRPC transport settings. The SDK serves with it, the host dials with it.
package protocol

import (
	"context"
	"net"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// The connector protocol versions, as go-plugin negotiates them: all speak
// package faucet.connector.v1, each minor version adding to the ones before
// it. A build offers every version it speaks and go-plugin settles on the
// highest the other end offers too, so a plugin built against an earlier
// version keeps working, only without the later additions. A new minor
// version gets the next number, becomes Latest, and its additions are used
// only where Supports says the peer has them.
const (
	// Version1 is protocol 1.0.
	Version1 = 1
	// VersionSharedReads is protocol 1.1: a sink reading its source
	// directly offers memory the two share (ReadRequest.shared_region), and
	// the source writes its batches there instead of into the messages.
	VersionSharedReads = 2
	// VersionDatasets is protocol 1.2: asked to (report_datasets), a source
	// and a sink end a call with the datasets it read or wrote and their
	// observed schema (Stats.datasets), and a sink reading its source
	// directly passes the source's final stats on (Stats.upstream).
	VersionDatasets = 3
	// VersionFileAccess is protocol 1.3: faucet serve sends every call that
	// may open files the file roots and the server's own files to refuse
	// (FileAccess), a sink reports the files it wrote (Stats.outputs), and
	// a sink that rejects_records refuses single records under a record
	// policy (Rejected) instead of failing the session.
	VersionFileAccess = 4
	// VersionObserved is protocol 1.4: a call's observed schema crosses the
	// wire once (Stats.observed, report_observed) rather than on each of
	// its datasets, and a sink reading its source directly takes the one
	// sample of the records both see (sampled_by_reader).
	VersionObserved = 5
	// Latest is the highest version this build speaks.
	Latest = VersionObserved
)

// Supports reports whether a peer that negotiated version has the additions
// of version feature.
func Supports(version, feature int) bool { return version >= feature }

// PluginName is the key of the connector service in go-plugin's plugin set.
const PluginName = "connector"

// Handshake is the go-plugin handshake. The magic cookie is not security: it
// stops a user from running a plugin binary by hand and keeps faucet from
// talking to an executable that is not a faucet connector.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  Version1,
	MagicCookieKey:   "FAUCET_CONNECTOR_PLUGIN",
	MagicCookieValue: "d9c1f2b4-faucet-connector-7e3a",
}

// Transport limits. Batches are cut far below the message limit (see
// sdk.MaxMessageBytes); the flow-control windows are sized so a whole batch
// is in flight while the previous one is processed, which is what lets the
// two processes work in parallel.
const (
	// MaxMessageBytes is the gRPC message limit both sides set.
	MaxMessageBytes   = 16 << 20
	streamWindowBytes = 4 << 20
	connWindowBytes   = 16 << 20
	socketBufferBytes = 256 << 10
)

// ServerOptions are the gRPC server settings of a plugin.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.InitialWindowSize(streamWindowBytes),
		grpc.InitialConnWindowSize(connWindowBytes),
		grpc.ReadBufferSize(socketBufferBytes),
		grpc.WriteBufferSize(socketBufferBytes),
		grpc.ForceServerCodecV2(codec{}),
	}
}

// DialOptions are the gRPC client settings faucet connects to a plugin with.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes), grpc.ForceCodecV2(codec{})),
		grpc.WithInitialWindowSize(streamWindowBytes),
		grpc.WithInitialConnWindowSize(connWindowBytes),
		grpc.WithReadBufferSize(socketBufferBytes),
		grpc.WithWriteBufferSize(socketBufferBytes),
	}
}

// Dialer connects a sink plugin to a source plugin's listener, whose
// address faucet passes on from the source's handshake.
func Dialer(network string) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// Plugin adapts the connector service to go-plugin, gRPC only. The plugin
// side sets Impl; the host side uses the client it returns.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl connectorv1.ConnectorServiceServer
}

// GRPCServer registers the connector service on the plugin's gRPC server.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	connectorv1.RegisterConnectorServiceServer(s, p.Impl)
	return nil
}

// GRPCClient returns the connector service client for a plugin connection.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return connectorv1.NewConnectorServiceClient(c), nil
}

// PluginSets maps each protocol version this build speaks to its plugin set,
// for go-plugin's version negotiation. Every version is the same service;
// what differs is which of its calls a peer may make.
func PluginSets(server connectorv1.ConnectorServiceServer) map[int]plugin.PluginSet {
	sets := map[int]plugin.PluginSet{}
	for v := Version1; v <= Latest; v++ {
		sets[v] = plugin.PluginSet{PluginName: &Plugin{Impl: server}}
	}
	return sets
}
