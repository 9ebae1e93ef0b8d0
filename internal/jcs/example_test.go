package jcs_test

import (
	"errors"
	"fmt"
	"math"

	"github.com/capgate/capgate/internal/jcs"
)

func ExampleCanonicalize() {
	out, err := jcs.Canonicalize([]byte(`{ "b": [1.50, 1E3, -0], "a": "\u00e9" }`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output: {"a":"é","b":[1.5,1000,0]}
}

func ExampleParse() {
	doc := []byte(`{"capabilities":[{"id":"files.read"},{"id":"a","id":"b"}]}`)
	_, err := jcs.Parse(doc, &jcs.Options{ExactNumbers: true})
	fmt.Println(err)
	fmt.Println(errors.Is(err, jcs.ErrDuplicateKey))
	// Output:
	// jcs: capabilities[1]: duplicate object member name (offset 47)
	// true
}

func ExampleFormatNumber() {
	for _, f := range []float64{1e21, 1e20, 0.000001, 1e-7, math.Copysign(0, -1)} {
		s, _ := jcs.FormatNumber(f)
		fmt.Println(s)
	}
	// Output:
	// 1e+21
	// 100000000000000000000
	// 0.000001
	// 1e-7
	// 0
}
