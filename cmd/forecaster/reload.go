package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/rs/zerolog"
)

// reloader reads the -model file again and has the service forecast with
// it (on SIGHUP, POST /-/reload with -http-reload, or a change of the file
// with -poll-model): a model rolled out without a restart, one reload at a
// time. An unreadable or incompatible
// file is logged and counted, and the model served is kept. With a scored
// part (-score-part), a new model of another split is warned about: the
// part scored stays the first model's, which the new one may have trained
// on.
type reloader struct {
	once   sync.Once
	turn   chan struct{} // holds a token while a reload runs (see reload)
	svc    *stream.Service
	path   string
	scored bool
	https  *httpsCreds // -http's HTTPS certificate and client authorities, reloaded by reloadAll; nil: plain HTTP
	creds  *kafkaCreds // the Kafka credentials reloadAll reads again; nil: none to read
	log    zerolog.Logger
}

// reloadAll is what SIGHUP and POST /-/reload ask for: it reads -http's
// certificate and client authorities again (with -http-tls-cert and
// -http-tls-client-ca), and the Kafka credentials
// (-sasl-password-file, -tls-cert/-tls-key), then reloads the model (see
// reload). Each is taken or kept on its own, so that a certificate that
// does not read does not hold back a new model, nor a model refused a
// rotated certificate; the error says what was kept and why, and POST
// /-/reload answers 409 with it, as for a model refused (503 when the
// model reload was busy). -poll-model reloads the model alone.
func (r *reloader) reloadAll(ctx context.Context, trigger string) (string, error) {
	var kept error
	if r.https != nil {
		kept = r.reloadHTTPS(trigger)
	}
	if r.creds != nil {
		took, err := r.creds.reload()
		if len(took) > 0 {
			r.log.Info().Strs("took", took).Str("by", trigger).Msg("Kafka credentials reloaded: new connections use them")
		}
		if err != nil {
			r.log.Error().Err(err).Str("by", trigger).Msg("Kafka credentials reload refused: the credentials in use are kept")
			r.svc.Counters().CredentialReloadFailures.Add(1)
			err = fmt.Errorf("the Kafka credentials in use are kept: %w", err)
			if kept != nil {
				err = fmt.Errorf("%w; %w", kept, err)
			}
			kept = err
		}
	}
	version, err := r.reload(ctx, trigger)
	switch {
	case kept == nil:
		return version, err
	case err == nil:
		return version, fmt.Errorf("%w; the model was reloaded", kept)
	}
	return version, fmt.Errorf("%w; and %w", err, kept)
}

// reloadHTTPS reads -http's certificate and client authorities again
// for reloadAll, logging what it took and what it kept and why; the error
// says what was kept.
func (r *reloader) reloadHTTPS(trigger string) error {
	var kept []error
	cert := r.https.cert
	was := cert.Leaf().SerialNumber.String()
	if leaf, err := cert.Reload(); err != nil {
		kept = append(kept, fmt.Errorf("the HTTPS certificate served is kept: %w", err))
		r.log.Error().Err(err).Str("serving", was).Str("by", trigger).Msg("certificate reload refused: the certificate served is kept")
		r.svc.Counters().CredentialReloadFailures.Add(1)
	} else {
		r.log.Info().Str("cert", cert.CertFile).Str("serial", leaf.SerialNumber.String()).Str("was", was).
			Time("not_after", leaf.NotAfter).Str("by", trigger).Msg("HTTPS certificate reloaded")
	}
	if cas := r.https.clientCAs; cas != nil {
		if got, err := cas.Reload(); err != nil {
			kept = append(kept, fmt.Errorf("the HTTPS client authorities in use are kept: %w", err))
			r.log.Error().Err(err).Strs("using", subjects(cas.Certificates())).Str("by", trigger).
				Msg("client authorities reload refused: the authorities in use are kept")
			r.svc.Counters().CredentialReloadFailures.Add(1)
		} else {
			r.log.Info().Str("client_ca", cas.File).Strs("client_authorities", subjects(got)).Str("by", trigger).
				Msg("HTTPS client authorities reloaded: new handshakes are checked against them")
		}
	}
	if len(kept) == 2 {
		return fmt.Errorf("%w; %w", kept[0], kept[1])
	} else if len(kept) == 1 {
		return kept[0]
	}
	return nil
}

// reload reloads the model on behalf of trigger (named in the log) and
// returns the version served afterwards, or why the model served was kept;
// it waits for the batch in hand until ctx ends (see
// stream.Service.ReloadContext).
func (r *reloader) reload(ctx context.Context, trigger string) (string, error) {
	// One reload at a time, waited for only until ctx ends: a SIGHUP or a
	// poll that waits for the batch in hand (the broker away) must not
	// hold POST /-/reload past its own deadline.
	r.once.Do(func() { r.turn = make(chan struct{}, 1) })
	start := time.Now()
	select {
	case r.turn <- struct{}{}:
	case <-ctx.Done():
		r.svc.Counters().ReloadFailures.Add(1)
		old := r.svc.Bundle().Meta.Version
		err := fmt.Errorf("reload model: %w: another reload has waited for it %s (is the broker reachable? see /readyz): %w",
			stream.ErrReloadBusy, time.Since(start).Round(time.Millisecond), ctx.Err())
		r.log.Error().Err(err).Str("model", r.path).Str("serving", old).Str("by", trigger).Msg("reload refused: the model served is kept")
		return old, err
	}
	defer func() { <-r.turn }()
	r.log.Info().Str("model", r.path).Str("by", trigger).Msg("reloading the model")
	old := r.svc.Bundle().Meta
	b, err := sdgnn.LoadBundle(r.path)
	if err != nil {
		r.svc.Counters().ReloadFailures.Add(1)
	} else {
		err = r.svc.ReloadContext(ctx, b)
	}
	if err != nil {
		r.log.Error().Err(err).Str("model", r.path).Str("serving", old.Version).Msg("reload refused: the model served is kept")
		return old.Version, err
	}
	if r.scored && !reflect.DeepEqual(b.Meta.Split, old.Split) {
		r.log.Warn().Str("model", b.Meta.Version).Str("was", old.Version).
			Msg("the new model was trained on another split: the live view still scores the part of the first model's split, which the new model may have trained on")
	}
	return b.Meta.Version, nil
}

// watch looks at the model file every interval until ctx ends and reloads
// it when it changed since last seen (another file, as after an atomic
// rename, or another size or modification time), as TensorFlow Serving
// polls its model directory. loaded is the file as it was when the model
// served was read (nil: unknown, so the first look reloads). A file
// copied in place may be seen mid-copy, refused as truncated, and taken
// at the next look; a file unchanged since a refusal is not tried again.
// A file that cannot be looked at (gone, say) is reported once, until it
// can be again.
func (r *reloader) watch(ctx context.Context, every time.Duration, loaded os.FileInfo) {
	last, missing := loaded, false
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur, err := os.Stat(r.path)
		if err != nil {
			if !missing { // once per disappearance, not at every look
				r.log.Warn().Err(err).Msg("-poll-model: cannot look at the model file: the model served is kept")
			}
			missing = true
			continue
		}
		missing = false
		if last != nil && os.SameFile(last, cur) && cur.Size() == last.Size() && cur.ModTime().Equal(last.ModTime()) {
			continue
		}
		last = cur
		r.reload(ctx, "model file changed")
	}
}

// onSignal reloads on every SIGHUP that hup receives (see reloadAll),
// until ctx ends.
func (r *reloader) onSignal(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.reloadAll(ctx, "SIGHUP")
		}
	}
}
