// Package gemini is the Gemini API's generateContent wire format on the server
// side, on AI Studio (format gemini) and on Vertex AI (format vertex),
// docs/gemini.md.
//
// It decodes a GenerateContentRequest with its content fields, writes the
// GenerateContentResponse, its server-sent chunks and Google's error envelope
// (google.rpc.Status with its details), and declares its routes (the model and
// the method in the path), its credentials (x-goog-api-key, ?key=, a bearer
// token), its catalogue and its models endpoints' shape in its wire.Spec.
package gemini
