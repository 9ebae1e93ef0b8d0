package kb

// The limits of the knowledge base, each with its reason. The index is read whole into memory
// at start and at every reindex, so its size is bounded; a search's cost grows with its terms
// and the documents, so both are bounded too.
const (
	// MaxDocuments bounds the documents of an index: an example of a few notes, with room.
	MaxDocuments = 256
	// MaxDocumentBytes bounds one document file: a note, never a book, read whole.
	MaxDocumentBytes = 64 << 10
	// MaxIndexBytes bounds the index as a whole, so the provider's memory stays small.
	MaxIndexBytes = 4 << 20
	// MaxIDBytes bounds a document id (its file name without ".md"), as the read capability's
	// schema does (maxLength 64).
	MaxIDBytes = 64
	// MaxTitleBytes bounds a document's title line, which every hit carries.
	MaxTitleBytes = 200
	// MaxQueryTerms bounds the distinct terms of a search: each costs a pass over the index.
	MaxQueryTerms = 16
	// MaxHits bounds the hits a search returns: an agent reads the best few, then reads them.
	MaxHits = 10
)
