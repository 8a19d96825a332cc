/* The release, for --version, serverInfo and the OpenAPI document. */
#pragma once

#define XB_VERSION "0.1.0"
