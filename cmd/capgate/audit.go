package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/capgate/capgate/internal/audit"
	"github.com/capgate/capgate/internal/gateway"
	"github.com/capgate/capgate/internal/store"
	"github.com/capgate/capgate/keys"
)

func newAuditVerifyCmd(g *globals) *cobra.Command {
	var data, export, pubFile, headFile, witness string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--data DIR] [--json] | verify --export FILE [--public-key FILE] [--head FILE]",
		Short: "Verify the audit log against its checkpoints, its head file, its mirror and its witness; exit 0 only for an intact log",
		Long: `Verify the audit log of the data folder: the hash chain and the signed checkpoints in the
store, and the store held against what is kept outside it, so that a deleted tail shows:

  - the head file DATA/audit.head (the log's head, written at every commit before a call is
    answered, and the latest signed checkpoint): the store must reach it and match it there;
  - the mirror DATA/audit.jsonl: every line must be the store's entry, in order, with no gap;
    a mirror behind the store (what a crash between the two leaves) is a note, and the
    gateway's next start writes what it lacks;
  - the witness (--audit-witness, $CAPGATE_AUDIT_WITNESS or audit_witness in the config file):
    the store must reach the checkpoint it holds; one that cannot be asked is a failure;
  - tokens and clients: every token in the store has its issue in the log, and a store with
    clients, tokens or consent requests has a log that is not empty.

Each failure names the seq where it shows and the source that disagrees. The notes say what
stays unproven: entries after the last signed checkpoint, and after the last head kept
outside the store.

With --export FILE, verify a file written by capgate audit export, offline, with the gateway's
public key (--public-key FILE, 32 raw bytes or their base64 as capgate audit public-key writes
them; by default the data folder's own key): the chain, each checkpoint line's signature, and,
with --head FILE (a copy of DATA/audit.head) or a witness, that the file reaches the log's
head.

Exit 0 when intact, 1 when not (or when the log could not be read), 2 for a usage error.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := context.Background()
			if export != "" {
				return verifyExport(ctx, cmd, g, data, export, pubFile, headFile, witness, asJSON)
			}
			if pubFile != "" || headFile != "" {
				return usageErr("--public-key and --head go with --export")
			}
			st, dir, err := g.localStore(ctx, data)
			if err != nil {
				return err
			}
			defer st.Close()
			key, err := keys.LoadPrivateKey(filepath.Join(dir, gateway.KeyFile))
			if errors.Is(err, os.ErrNotExist) {
				return &exitError{code: exitNo, err: fmt.Errorf("no gateway key in %s (capgate serve has not run on this folder, or its replicas keep theirs elsewhere): the log's checkpoints cannot be checked; copy %s here", dir, gateway.KeyFile)}
			}
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			l, err := g.load(hostFlags{dataDir: data, witness: witness})
			if err != nil {
				return err
			}
			witnesses, err := gateway.AuditWitnesses(dir, l.witness)
			if err != nil {
				return usageErr("--audit-witness: %w", err)
			}
			r, err := audit.VerifyWith(ctx, st, key.Public().(ed25519.PublicKey), gateway.AuditVerifyOptions(dir, st, witnesses))
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			return printVerify(cmd.OutOrStdout(), r, asJSON)
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&export, "export", "", "verify this file written by capgate audit export instead of the store")
	cmd.Flags().StringVar(&pubFile, "public-key", "", "with --export: the gateway's public key file (default: the data folder's key)")
	cmd.Flags().StringVar(&headFile, "head", "", "with --export: a head file (a copy of DATA/audit.head) the export must reach")
	cmd.Flags().StringVar(&witness, "audit-witness", "", "the witness to compare with (default $CAPGATE_AUDIT_WITNESS, else audit_witness in the config file)")
	return cmd
}

// verifyExport is audit verify --export.
func verifyExport(ctx context.Context, cmd *cobra.Command, g *globals, data, file, pubFile, headFile, witness string, asJSON bool) error {
	var pub ed25519.PublicKey
	if pubFile != "" {
		p, err := keys.LoadPublicKey(pubFile)
		if err != nil {
			return usageErr("--public-key: %w", err)
		}
		pub = p
	} else {
		dir, err := g.dataDir(data)
		if err != nil {
			return usageErr("--export needs the gateway's public key: give --public-key FILE")
		}
		key, err := keys.LoadPrivateKey(filepath.Join(dir, gateway.KeyFile))
		if err != nil {
			return usageErr("--export needs the gateway's public key: give --public-key FILE (the data folder's key: %w)", err)
		}
		pub = key.Public().(ed25519.PublicKey)
	}
	opts := &audit.ExportVerifyOptions{HeadFile: headFile}
	l, err := g.load(hostFlags{dataDir: data, witness: witness})
	if err != nil {
		return err
	}
	if l.witness != "" {
		w, err := audit.ParseWitness(l.witness)
		if err != nil {
			return usageErr("--audit-witness: %w", err)
		}
		opts.Witnesses = append(opts.Witnesses, w)
	}
	f, err := os.Open(file)
	if err != nil {
		return usageErr("--export: %w", err)
	}
	defer f.Close()
	r, err := audit.VerifyExport(ctx, f, pub, opts)
	if err != nil {
		return &exitError{code: exitNo, err: err}
	}
	return printVerify(cmd.OutOrStdout(), r, asJSON)
}

// printVerify prints a verification report and returns the exit status it gives.
func printVerify(w io.Writer, r audit.Report, asJSON bool) error {
	if asJSON {
		// intact is the verdict the exit status gives; lists are [] when empty.
		v := struct {
			Intact bool `json:"intact"`
			*audit.Report
		}{r.OK(), &r}
		if v.Problems == nil {
			v.Problems = []audit.Problem{}
		}
		if v.Warnings == nil {
			v.Warnings = []audit.Problem{}
		}
		if v.Compared == nil {
			v.Compared = []audit.Compared{}
		}
		_ = writeJSON(w, v)
	} else {
		fmt.Fprintf(w, "%d records, %d checkpoints (last at %d), head %s\n", r.Entries, r.Checkpoints, r.LastCheckpointSeq, orNone(r.Head))
		for _, c := range r.Compared {
			fmt.Fprintf(w, "  compared with the %s %s: %s\n", strings.ReplaceAll(c.Source, "_", " "), c.Location, heldWords(c))
		}
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  %s\n", problemWords(p))
		}
		if r.ProblemsOmitted > 0 {
			fmt.Fprintf(w, "  and %d more problems\n", r.ProblemsOmitted)
		}
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "  note: %s\n", problemWords(warn))
		}
	}
	if !r.OK() {
		return &exitError{code: exitNo, err: errors.New("the audit log is not intact")}
	}
	if !asJSON {
		fmt.Fprintln(w, "intact")
	}
	return nil
}

// heldWords says what a compared source holds.
func heldWords(c audit.Compared) string {
	s := "up to seq " + strconv.FormatInt(c.Seq, 10)
	if c.Seq == 0 {
		s = "nothing yet"
	}
	if c.CheckpointSeq > 0 {
		s += ", checkpoint at " + strconv.FormatInt(c.CheckpointSeq, 10)
	}
	return s
}

// problemWords is a problem as a line: "record 12: rule" for the log itself, "seq 12, head
// file: rule" for another source, without the seq when there is none.
func problemWords(p audit.Problem) string {
	src := strings.ReplaceAll(p.Source, "_", " ")
	switch {
	case p.Source == audit.SourceStore || p.Source == audit.SourceExport:
		if p.Seq == 0 {
			return p.Rule
		}
		return "record " + strconv.FormatInt(p.Seq, 10) + ": " + p.Rule
	case p.Seq == 0:
		return src + ": " + p.Rule
	}
	return "seq " + strconv.FormatInt(p.Seq, 10) + ", " + src + ": " + p.Rule
}

func newAuditWitnessCmd() *cobra.Command {
	var listen, dir, pubFile string
	cmd := &cobra.Command{
		Use:   "witness --dir DIR --public-key FILE [--listen ADDR]",
		Short: "Serve a witness for a gateway's audit log: it keeps the highest checkpoint it is sent",
		Long: `Serve an audit witness over HTTP, for a gateway run elsewhere (its --audit-witness names
this witness's URL). The witness accepts a checkpoint only when the gateway's public key
(--public-key FILE, from capgate audit public-key) verifies it, keeps the highest one in
DIR/audit.witness, and refuses a lower seq, so that it never goes back. capgate audit verify
compares the log with it: a store cut below the witness's checkpoint, or rewritten at it, is
not intact, even when the gateway's data folder was cut with it.

The protocol, at any path: POST a signed checkpoint (200 held; 409 {"error":"lower"} when it
holds a higher one; 409 {"error":"fork"} when it holds another at the same seq; 400 for
anything that is not a checkpoint signed by the key); GET the checkpoint it holds (404 when
none). It listens on loopback by default; put it behind TLS to reach it across a network.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || pubFile == "" {
				return usageErr("--dir and --public-key are required")
			}
			pub, err := keys.LoadPublicKey(pubFile)
			if err != nil {
				return usageErr("--public-key: %w", err)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return &exitError{code: exitNo, err: err}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			srv := &http.Server{Handler: audit.WitnessHandler(pub, dir), ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(sctx)
			}()
			fmt.Fprintf(cmd.OutOrStdout(), "capgate audit witness on http://%s/ keeping %s\n", ln.Addr(), filepath.Join(dir, audit.WitnessFile))
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return &exitError{code: exitNo, err: err}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "capgate audit witness stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7767", "TCP address to listen on")
	cmd.Flags().StringVar(&dir, "dir", "", "folder the witness keeps its checkpoint in")
	cmd.Flags().StringVar(&pubFile, "public-key", "", "the gateway's public key file (capgate audit public-key)")
	return cmd
}

func newAuditPublicKeyCmd(g *globals) *cobra.Command {
	var data, out string
	cmd := &cobra.Command{
		Use:   "public-key [--data DIR] [--out FILE]",
		Short: "Print the gateway's public key, which verifies its audit checkpoints (for a witness or an auditor)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDir(data)
			if err != nil {
				return err
			}
			key, err := keys.LoadPrivateKey(filepath.Join(dir, gateway.KeyFile))
			if err != nil {
				return &exitError{code: exitNo, err: err}
			}
			pub := key.Public().(ed25519.PublicKey)
			if out != "" {
				if err := keys.WritePublicKey(out, pub, false); err != nil {
					return &exitError{code: exitNo, err: err}
				}
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), base64.StdEncoding.EncodeToString(pub))
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "data folder")
	cmd.Flags().StringVar(&out, "out", "", "write it to this file (32 raw bytes) instead of printing its base64")
	return cmd
}

func newAuditCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Verify, tail and export the tamper-evident audit log"}
	var data string
	var asJSON bool
	verify := newAuditVerifyCmd(g)

	var n int
	tail := &cobra.Command{
		Use:   "tail [-n N] [--json] [--data DIR]",
		Short: "Print the last records of the audit log",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				entries, err := audit.Tail(ctx, st, n)
				if err != nil {
					return err
				}
				w := cmd.OutOrStdout()
				if asJSON {
					return writeJSON(w, entries)
				}
				for _, e := range entries {
					r := e.Record
					fmt.Fprintf(w, "%d  %s  %-8s %-7s %-18s client %s  %s %s/%s  %s\n", e.Seq, time.Unix(r.Timestamp, 0).UTC().Format(time.RFC3339),
						r.Kind, r.Decision, orNone(r.Code), orNone(r.ClientID), r.Action, orNone(r.App), orNone(r.Method), r.Result)
				}
				return nil
			})
		},
	}
	tail.Flags().IntVarP(&n, "lines", "n", 20, "how many records")
	tail.Flags().StringVar(&data, "data", "", "data folder")
	tail.Flags().BoolVar(&asJSON, "json", false, "print as JSON")

	var from, to int64
	export := &cobra.Command{
		Use:   "export [--from SEQ] [--to SEQ] [--data DIR]",
		Short: "Write the audit log as JSON lines (seq, prev_hash, hash, at, record), each checkpoint on a line of its own (verify --export checks the file)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.onStore(data, func(ctx context.Context, st store.Store) error {
				return audit.Export(ctx, st, cmd.OutOrStdout(), from, to)
			})
		},
	}
	export.Flags().Int64Var(&from, "from", 1, "first record")
	export.Flags().Int64Var(&to, "to", 0, "last record (0: the end)")
	export.Flags().StringVar(&data, "data", "", "data folder")
	cmd.AddCommand(verify, tail, export, newAuditWitnessCmd(), newAuditPublicKeyCmd(g))
	return cmd
}
