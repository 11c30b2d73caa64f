package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/wapipe/wapipe/internal/keyedid"
)

// DB is a connection to wapipe's Firestore database. It is the only handle on Firestore outside
// this package: the stores below are built on it, and nobody else holds a Firestore client.
type DB struct {
	fs *firestore.Client
	// conn is the emulator connection OpenEmulator made, which the client does not own.
	conn *grpc.ClientConn
	// keyer names the documents derived from people (keyedid); the development key's until
	// SetKeyer.
	keyer *keyedid.Keyer
	// legacy says whether reads still fall back to the ids of before the migration (legacy.go).
	legacy *legacyState
}

// SetKeyer makes k the keyer of every store built on db from now on: a service sets the keyer of
// its LOG_HASH_KEY before it builds its stores. Without it the development key names them.
func (db *DB) SetKeyer(k *keyedid.Keyer) {
	if k != nil {
		db.keyer = k
	}
}

// Keyer is the keyer the stores on db name people's documents with.
func (db *DB) Keyer() *keyedid.Keyer { return db.keyer }

// Open connects to the database of projectID ("(default)" when database is empty), or to the
// emulator when FIRESTORE_EMULATOR_HOST is set (the client library reads that itself). Close it
// when done.
func Open(ctx context.Context, projectID, database string) (*DB, error) {
	if database == "" {
		database = firestore.DefaultDatabaseID
	}
	c, err := firestore.NewClientWithDatabase(ctx, projectID, database)
	if err != nil {
		return nil, fmt.Errorf("firestore.NewClientWithDatabase: %w", err)
	}
	return newDB(c, nil), nil
}

func newDB(c *firestore.Client, conn *grpc.ClientConn) *DB {
	return &DB{fs: c, conn: conn, keyer: keyedid.Dev(), legacy: &legacyState{}}
}

// OpenEmulator connects to the Firestore emulator at host (host:port) as its administrator, as the
// client library does when FIRESTORE_EMULATOR_HOST is set, without reading the environment: the
// local stack and the operator CLI name their emulator explicitly. Close it when done.
func OpenEmulator(ctx context.Context, host, projectID, database string) (*DB, error) {
	conn, err := grpc.NewClient(host,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32)),
	)
	if err != nil {
		return nil, fmt.Errorf("grpc.NewClient %s: %w", host, err)
	}
	if database == "" {
		database = firestore.DefaultDatabaseID
	}
	c, err := firestore.NewClientWithDatabase(ctx, projectID, database, option.WithGRPCConn(conn))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("firestore.NewClientWithDatabase: %w", err)
	}
	return newDB(c, conn), nil
}

// emulatorOwner is the credential the Firestore emulator takes as its administrator's.
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (emulatorOwner) RequireTransportSecurity() bool { return false }

// NewDB wraps a client the caller made and still owns (tests make theirs on the emulator, or on a
// port where nothing listens).
func NewDB(c *firestore.Client) *DB { return newDB(c, nil) }

// Close releases the connection.
func (db *DB) Close() error {
	err := db.fs.Close()
	if db.conn != nil {
		err = errors.Join(err, db.conn.Close())
	}
	return err
}

// Options configure the record stores; zero values take the defaults.
type Options struct {
	// Retention sets expire_at = now + Retention on each document; DefaultRetention when zero.
	Retention time.Duration
	// ReconcileWindow is how long a send of unknown outcome blocks a resend (Outbound only);
	// DefaultReconcileWindow when zero.
	ReconcileWindow time.Duration
	// Now is time.Now when nil; tests move it.
	Now func() time.Time

	// txHooks force transaction retries in tests.
	txHooks *txHooks
}

func (o Options) withDefaults() Options {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.ReconcileWindow <= 0 {
		o.ReconcileWindow = DefaultReconcileWindow
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// getDoc reads and decodes one document; ErrNotFound when it does not exist.
func getDoc[T any](ctx context.Context, ref *firestore.DocumentRef, what string) (T, error) {
	var v T
	snap, err := ref.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return v, ErrNotFound
	}
	if err != nil {
		return v, fmt.Errorf("read %s: %w", what, err)
	}
	if err := snap.DataTo(&v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}

// queryAll runs q and decodes every document it returns into a T, in the query's order; what names
// the documents in errors.
func queryAll[T any](ctx context.Context, q firestore.Query, what string) ([]T, error) {
	it := q.Documents(ctx)
	defer it.Stop()
	var out []T
	for {
		snap, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		var v T
		if err := snap.DataTo(&v); err != nil {
			return nil, fmt.Errorf("decode %s: %w", what, err)
		}
		out = append(out, v)
	}
}

// count runs a count aggregation: health reads counts, never every document.
func count(ctx context.Context, q firestore.Query) (int64, error) {
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, err
	}
	switch v := res["n"].(type) {
	case int64:
		return v, nil
	default:
		// The client returns a protobuf Value for counts.
		if pv, ok := v.(interface{ GetIntegerValue() int64 }); ok {
			return pv.GetIntegerValue(), nil
		}
		return 0, fmt.Errorf("unexpected count type %T", v)
	}
}
