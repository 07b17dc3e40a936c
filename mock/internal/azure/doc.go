// Package azure is Azure OpenAI's wire format on the server side
// (docs/azure.md): the OpenAI formats, openaichat.Format and
// openairesponses.Format, served under Azure's paths.
//
// It adds Azure's key header (api-key), its api-version query parameter,
// deployments (a name that serves a model, with its own pool of limits), its
// own error envelope and 429 text, its rate-limit headers and its
// content-filter annotations. It wraps the two formats rather than copying
// them: their decoding, bodies and streams are theirs, annotated.
//
// Chat and Responses are registered in the core's formats (mock/routes.go);
// their routes' Resolve makes a value per request carrying the path's deployment
// and the api-version sent. The azure: block of the server's configuration
// (deployments and their limits, the content filter's rate) is the core's
// (mock/config.go), handed over as a wire.Env.
package azure
