package store

import (
	"errors"
	"strings"
)

// StateValue is a value read from app state as the State interface returns it: a stored
// value is never nil, since nil means no value (PutState deletes the key).
func StateValue(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// CheckCreate checks CreateState's value: nil cannot be created (PutState's nil deletes).
func CheckCreate(value []byte) error {
	if value == nil {
		return errors.New("value: must not be nil")
	}
	return nil
}

// CollectState reads ListState's result, rows of (key, value), into its map, keeping only
// the keys that start with prefix byte for byte: the definition, whatever the query's range
// let through.
func CollectState(rows Rows, prefix string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		if strings.HasPrefix(k, prefix) {
			out[k] = StateValue(v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
