package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/jobdrop/jobdrop/internal/avro"
	"github.com/jobdrop/jobdrop/internal/schemaregistry"
)

// openSchemaRegistry is the codec the engine reads and writes
// light-scheduler's Avro with, through kafka.schema_registry.url when set.
// Without it, on the embedded broker, jobdrop runs a registry of its own,
// kept in Kafka, which the console serves to producers (reg) and the
// engine asks within the process. With brokers and no registry, the codec
// is nil: Avro commands are refused by name.
func openSchemaRegistry(ctx context.Context, cfg Config, clientOpts []kgo.Opt, log *slog.Logger) (codec *avro.Codec, reg *schemaregistry.Registry, err error) {
	cl, err := cfg.Kafka.SchemaRegistry.Client()
	if err != nil {
		return nil, nil, err
	}
	if cl != nil {
		return avro.New(cl), nil, nil
	}
	if len(cfg.Kafka.Brokers) > 0 {
		return nil, nil, nil
	}
	reg, err = schemaregistry.Open(ctx, schemaregistry.Config{ClientOpts: clientOpts}, log)
	if err != nil {
		return nil, nil, err
	}
	if cl, err = reg.Client(); err != nil {
		reg.Close()
		return nil, nil, fmt.Errorf("schema registry: %w", err)
	}
	return avro.New(cl), reg, nil
}
