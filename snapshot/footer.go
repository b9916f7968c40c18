package snapshot

import (
	"encoding/binary"
	"fmt"
	"io"

	flatbuffers "github.com/google/flatbuffers/go"
)

// checkFooter checks, before arrow's IPC reader sees the file, that every
// vector length in its footer's schema fits in the footer: the number of
// fields, of each field's children and of every list of key-value
// metadata; that every dictionary and record batch block lies within the
// file (checkBlocks); and that every buffer of those batches lies within
// its batch's body (checkMessage). arrow/go v15 reads the schema without
// verifying its flatbuffer and allocates a slice of each such length at
// once, so one corrupt byte asked for tens of gigabytes, and an
// allocation the machine cannot make ends the process whatever recovers;
// it allocates each message and buffer at the length the file gives
// before reading it. A file that is not an Arrow file at all, or is too
// short, is left for the reader to refuse. The offsets followed are those
// arrow's generated accessors follow (File.fbs, Schema.fbs and
// Message.fbs of the Arrow format). compressed reports whether a batch
// has compressed buffers (BodyCompression), whose uncompressed lengths
// only the reader's allocator bounds (readAllocator).
func checkFooter(r io.ReaderAt, size int64) (compressed bool, err error) {
	const magic = "ARROW1"
	tail := make([]byte, 4+len(magic))
	if size < int64(2*len(magic)+4) {
		return false, nil
	}
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil || string(tail[4:]) != magic {
		return false, nil
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n <= 0 || n+int64(2*len(magic)+4) > size {
		return false, nil // the reader says the footer is inconsistent
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-int64(len(tail))-n); err != nil {
		return false, nil
	}
	// An offset beyond the footer panics in the accessors; that is a
	// corrupt footer too.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt Arrow IPC footer: %v", r)
		}
	}()
	footer := flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
	dicts, err := checkBlocks(r, footer, 2, "dictionary", size)
	if err != nil {
		return false, err
	}
	batches, err := checkBlocks(r, footer, 3, "record batch", size)
	if err != nil {
		return false, err
	}
	compressed = dicts || batches
	schema, ok := child(footer, 1)
	if !ok {
		return compressed, nil
	}
	if _, err := vectorOfTables(schema, 2); err != nil { // custom_metadata
		return false, err
	}
	return compressed, checkFields(schema, 1, 0) // fields
}

// slotOffset returns the vtable offset of field slot i of a table.
func slotOffset(i int) flatbuffers.VOffsetT { return flatbuffers.VOffsetT(4 + 2*i) }

// child returns the table in slot i of t, as a generated accessor reads it.
func child(t flatbuffers.Table, i int) (flatbuffers.Table, bool) {
	o := t.Offset(slotOffset(i))
	if o == 0 {
		return flatbuffers.Table{}, false
	}
	return flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(flatbuffers.UOffsetT(o) + t.Pos)}, true
}

// vectorOfTables returns the tables of the vector in slot i of t, after
// checking that its length fits in what follows its start.
func vectorOfTables(t flatbuffers.Table, i int) ([]flatbuffers.Table, error) {
	o := t.Offset(slotOffset(i))
	if o == 0 {
		return nil, nil
	}
	n, start := t.VectorLen(flatbuffers.UOffsetT(o)), t.Vector(flatbuffers.UOffsetT(o))
	if int(start) > len(t.Bytes) || n > (len(t.Bytes)-int(start))/flatbuffers.SizeUOffsetT {
		return nil, fmt.Errorf("corrupt Arrow IPC footer: a vector of %d entries in a footer of %d bytes", n, len(t.Bytes))
	}
	out := make([]flatbuffers.Table, n)
	for j := range out {
		out[j] = flatbuffers.Table{Bytes: t.Bytes, Pos: t.Indirect(start + flatbuffers.UOffsetT(j*flatbuffers.SizeUOffsetT))}
	}
	return out, nil
}

// blockSize is the size of the Block struct of File.fbs: offset int64,
// metaDataLength int32, 4 bytes of padding, bodyLength int64.
const blockSize = 24

// checkBlocks checks the vector of Blocks in slot i of the footer (the
// dictionaries or the record batches) and that each block's message,
// metadata and body, lies within the file of size bytes: the reader
// allocates both lengths before it reads a byte of them. compressed
// reports whether a block's batch has compressed buffers.
func checkBlocks(r io.ReaderAt, footer flatbuffers.Table, i int, what string, size int64) (compressed bool, err error) {
	o := footer.Offset(slotOffset(i))
	if o == 0 {
		return false, nil
	}
	n, start := footer.VectorLen(flatbuffers.UOffsetT(o)), footer.Vector(flatbuffers.UOffsetT(o))
	if int(start) > len(footer.Bytes) || n > (len(footer.Bytes)-int(start))/blockSize {
		return false, fmt.Errorf("corrupt Arrow IPC footer: %d %s blocks in a footer of %d bytes", n, what, len(footer.Bytes))
	}
	for j := 0; j < n; j++ {
		at := start + flatbuffers.UOffsetT(j*blockSize)
		off, meta, body := footer.GetInt64(at), int64(footer.GetInt32(at+8)), footer.GetInt64(at+16)
		if off < 0 || meta < 0 || body < 0 || off > size || meta > size-off || body > size-off-meta {
			return false, fmt.Errorf("corrupt Arrow IPC footer: %s %d at byte %d, %d bytes of metadata and %d of body, is not within the file's %d bytes", what, j, off, meta, body, size)
		}
		c, err := checkMessage(r, off, meta, body, i == 2)
		if err != nil {
			return false, fmt.Errorf("corrupt Arrow IPC %s %d: %w", what, j, err)
		}
		compressed = compressed || c
	}
	return compressed, nil
}

// checkMessage checks the record batch (or, for dict, dictionary batch)
// message whose metadata, meta bytes at off, the block gives: that each
// of its buffers lies within the body of body bytes that follows. The
// reader allocates an uncompressed buffer at the length the message gives
// before it reads it from the body. A compressed buffer's length is that
// of its 8-byte uncompressed length and compressed bytes in the body
// (BodyCompression), so it too lies within the body; the uncompressed
// length is left to the reader's allocator (readAllocator). The
// encapsulated message (Message.fbs, after the IPC format's continuation
// prefix) is read as arrow's reader reads it; what it cannot make sense
// of is left to the reader. compressed reports whether the batch has
// compressed buffers (RecordBatch.compression).
func checkMessage(r io.ReaderAt, off, meta, body int64, dict bool) (compressed bool, err error) {
	if meta < 8 {
		return false, nil
	}
	buf := make([]byte, meta)
	if _, err := r.ReadAt(buf, off); err != nil {
		return false, nil
	}
	switch binary.LittleEndian.Uint32(buf) {
	case 0:
	case 0xFFFFFFFF: // continuation marker, then the metadata length
		buf = buf[8:]
	default: // before Arrow 0.15: the metadata length alone
		buf = buf[4:]
	}
	if len(buf) < 4 {
		return false, nil
	}
	defer func() {
		if r := recover(); r != nil {
			compressed, err = false, fmt.Errorf("metadata: %v", r)
		}
	}()
	msg := flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
	// The header is read as the block's kind says, whatever the message's
	// header_type, as arrow's reader reads a dictionary's.
	batch, ok := child(msg, 2)
	if ok && dict { // DictionaryBatch{id, data: RecordBatch, isDelta}
		batch, ok = child(batch, 1)
	}
	if !ok {
		return false, nil
	}
	compressed = batch.Offset(slotOffset(3)) != 0 // compression: BodyCompression
	o := batch.Offset(slotOffset(2))              // buffers: [Buffer{offset, length int64}]
	if o == 0 {
		return compressed, nil
	}
	n, start := batch.VectorLen(flatbuffers.UOffsetT(o)), batch.Vector(flatbuffers.UOffsetT(o))
	const bufferSize = 16
	if int(start) > len(buf) || n > (len(buf)-int(start))/bufferSize {
		return false, fmt.Errorf("%d buffers in %d bytes of metadata", n, len(buf))
	}
	for k := 0; k < n; k++ {
		at := start + flatbuffers.UOffsetT(k*bufferSize)
		bo, bl := batch.GetInt64(at), batch.GetInt64(at+8)
		if bo < 0 || bl < 0 || bo > body || bl > body-bo {
			return false, fmt.Errorf("buffer %d at byte %d, %d bytes long, is not within the body's %d bytes", k, bo, bl, body)
		}
	}
	return compressed, nil
}

// maxFieldDepth bounds the nesting of fields followed: far beyond any
// schema here, and a guard against a stack of corrupt children.
const maxFieldDepth = 64

// checkFields checks the vector of fields in slot i of t and, in each
// field, its custom_metadata (slot 6) and children (slot 5), recursively.
func checkFields(t flatbuffers.Table, i, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("corrupt Arrow IPC footer: fields nested over %d deep", maxFieldDepth)
	}
	fields, err := vectorOfTables(t, i)
	if err != nil {
		return err
	}
	for _, f := range fields {
		if _, err := vectorOfTables(f, 6); err != nil {
			return err
		}
		if err := checkFields(f, 5, depth+1); err != nil {
			return err
		}
	}
	return nil
}
