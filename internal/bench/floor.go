package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/capgate/capgate/client"
	"github.com/capgate/capgate/internal/ipc"
)

// Floors are what a gateway run is compared with on the same machine: the least any gateway
// answering over loopback HTTP with durable records could do.
type Floors struct {
	// The empty exchange: the same workers, client, envelope and keep-alive connections
	// against an HTTP handler that reads the request and writes a fixed success answer for
	// its request id. Nothing is decided, run or recorded.
	CallsPerSec float64 `json:"calls_per_sec"`
	P50MS       float64 `json:"p50_ms"`
	P99MS       float64 `json:"p99_ms"`
	// CPUPerCallUS, CoresUsed and SwitchesPerCall are the process's CPU time per exchange and
	// over the phase, and its context switches per exchange, as GatewayReport's.
	CPUPerCallUS    float64 `json:"cpu_us_per_call"`
	CoresUsed       float64 `json:"cores_used"`
	SwitchesPerCall float64 `json:"context_switches_per_call"`
	// SyncWriteMS is the median of appending 4 KiB to a file in the data folder and waiting
	// for it to reach the disk (fsync), as a commit appends to SQLite's WAL: the least one
	// durable commit costs.
	SyncWriteMS float64 `json:"sync_write_ms"`
}

// syncWriteRuns is how many synchronous writes the SyncWriteMS median is taken over.
const syncWriteRuns = 200

// Sequential is one client making one call at a time, measured in one loop that does, in
// turn, an empty exchange, a real call through the gateway, and a synchronous 4 KiB append
// in the data folder: the three medians come from the same minutes, so the ratio of the
// call's added latency to the append holds whatever else the machine does.
type Sequential struct {
	Runs        int     `json:"runs"`
	ExchangeUS  float64 `json:"exchange_us"`   // the empty exchange, median
	CallUS      float64 `json:"call_us"`       // the real call, median
	SyncWriteUS float64 `json:"sync_write_us"` // write and fsync of 4 KiB, median
	// AddedUS is CallUS - ExchangeUS: what the gateway adds to the exchange.
	AddedUS float64 `json:"added_us"`
	// AddedPerSyncWrite is AddedUS / SyncWriteUS (goal: at most GoalSequential): a durable
	// call cannot cost less than one fsync, and should cost little more.
	AddedPerSyncWrite float64 `json:"added_per_sync_write"`
}

// sequentialRuns is how many turns of the sequential loop its medians are taken over.
const sequentialRuns = 2000

// The empty exchange's answer: a success envelope of the size of a real one, for the request
// id the request names (as every gateway echoes it, and the client checks).
var (
	floorAnswerHead = []byte(`{"header":{"msg_type":"llm_response","version":"1.0","request_id":"`)
	floorAnswerTail = []byte(`","timestamp":1706620800},"body":{"status":"success","result":{"category":"display","key":"brightness","value":50}}}`)
	requestIDMember = []byte(`"request_id":"`)
)

// floorBuffers hold the empty exchange's request bodies, read whole to find the request id.
var floorBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// floorHandler reads the request and writes the fixed success answer for its request id.
// Nothing is decided, run or recorded.
func floorHandler(w http.ResponseWriter, r *http.Request) {
	b := floorBuffers.Get().(*bytes.Buffer)
	defer floorBuffers.Put(b)
	b.Reset()
	if _, err := b.ReadFrom(io.LimitReader(r.Body, ipc.MaxEnvelopeBytes)); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	id := b.Bytes()
	if i := bytes.Index(id, requestIDMember); i >= 0 {
		id = id[i+len(requestIDMember):]
		id = id[:max(0, bytes.IndexByte(id, '"'))]
	} else {
		id = nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(floorAnswerHead)
	w.Write(id)
	w.Write(floorAnswerTail)
}

// measureFloors measures the empty exchange for d with opts.Workers workers, then the
// synchronous write in dir.
func measureFloors(ctx context.Context, dir string, d time.Duration, key, tok string, opts GatewayOptions) (Floors, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Floors{}, fmt.Errorf("bench: floor: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: gatewayCallTimeout, Handler: http.HandlerFunc(floorHandler)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	o := opts
	o.Duration = d
	r, err := drive(ctx, []string{"http://" + ln.Addr().String()}, key, tok, o)
	srv.Close()
	if serr := <-served; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	if err != nil {
		return Floors{}, fmt.Errorf("bench: floor: %w", err)
	}
	f := Floors{CallsPerSec: r.CallsPerSec, P50MS: r.P50MS, P99MS: r.P99MS, CPUPerCallUS: r.CPUPerCallUS, CoresUsed: r.CoresUsed, SwitchesPerCall: r.SwitchesPerCall}
	if f.SyncWriteMS, err = syncWrite(dir); err != nil {
		return Floors{}, fmt.Errorf("bench: floor: %w", err)
	}
	return f, nil
}

// syncWrite is the median time, in milliseconds, of appending 4 KiB to a file in dir and
// syncing it.
func syncWrite(dir string) (float64, error) {
	f, err := os.CreateTemp(dir, "sync-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	ds := make([]time.Duration, 0, syncWriteRuns)
	for i := range syncWriteRuns {
		page[0] = byte(i)
		start := time.Now()
		if _, err := f.Write(page); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e6, nil
}

// measureSequential runs the sequential loop: runs turns of one empty exchange (against a
// floor server of its own), one call through the gateway at gatewayURL, and one synchronous
// append in dir, each timed alone.
func measureSequential(ctx context.Context, dir, gatewayURL, key, tok string, runs int) (Sequential, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Sequential{}, fmt.Errorf("bench: sequential: %w", err)
	}
	srv := &http.Server{ReadHeaderTimeout: gatewayCallTimeout, Handler: http.HandlerFunc(floorHandler)}
	go srv.Serve(ln)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: gatewayCallTimeout}
	floorC, err := client.New(&client.Options{Server: "http://" + ln.Addr().String(), Key: key, HTTPClient: hc})
	if err != nil {
		return Sequential{}, fmt.Errorf("bench: sequential: %w", err)
	}
	gwC, err := client.New(&client.Options{Server: gatewayURL, Key: key, HTTPClient: hc})
	if err != nil {
		return Sequential{}, fmt.Errorf("bench: sequential: %w", err)
	}
	f, err := os.CreateTemp(dir, "sequential-")
	if err != nil {
		return Sequential{}, fmt.Errorf("bench: sequential: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	ex, calls, syncs := make([]time.Duration, 0, runs), make([]time.Duration, 0, runs), make([]time.Duration, 0, runs)
	for i := range runs {
		call := getSetting("s-"+strconv.Itoa(i), tok)
		t0 := time.Now()
		if _, err := floorC.Query(ctx, call); err != nil {
			return Sequential{}, fmt.Errorf("bench: sequential: the empty exchange: %w", err)
		}
		t1 := time.Now()
		if _, err := gwC.Query(ctx, call); err != nil {
			return Sequential{}, fmt.Errorf("bench: sequential: the call: %w", err)
		}
		t2 := time.Now()
		page[0] = byte(i)
		if _, err := f.Write(page); err != nil {
			return Sequential{}, fmt.Errorf("bench: sequential: %w", err)
		}
		if err := f.Sync(); err != nil {
			return Sequential{}, fmt.Errorf("bench: sequential: %w", err)
		}
		t3 := time.Now()
		ex, calls, syncs = append(ex, t1.Sub(t0)), append(calls, t2.Sub(t1)), append(syncs, t3.Sub(t2))
	}
	us := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	q := Sequential{Runs: runs, ExchangeUS: us(ex), CallUS: us(calls), SyncWriteUS: us(syncs)}
	q.AddedUS = q.CallUS - q.ExchangeUS
	q.AddedPerSyncWrite = q.AddedUS / q.SyncWriteUS
	return q, nil
}
