#pragma once
/// \file amg_args.hpp
/// The AMG options on the command line, shared by `krysp solve` and `krysp eigs`.
#include <set>
#include <string>

#include "krysp/precond/preconditioner.hpp"
#include "krysp/cli/args.hpp"

namespace krysp::cli {

/// The valued options read_amg_options() takes (add them to a command's Args).
const std::set<std::string>& amg_option_names();
/// Their lines of a command's --help.
const char* amg_option_help();
/// AmgOptions from --amg-* (defaults where absent); InputError for a malformed value. The ranges
/// are checked by validate(PrecondOptions) with the field's name.
AmgOptions read_amg_options(const Args& args);

}  // namespace krysp::cli
