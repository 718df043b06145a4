// The `kvmesh` command's subcommands. Each Register* function adds one
// subcommand to the app; when it is chosen, its callback runs and stores the
// process exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace kvmesh::cli {

void RegisterGgufCommand(CLI::App& app, int* exit_code);
void RegisterTokenizeCommand(CLI::App& app, int* exit_code);
void RegisterRunCommand(CLI::App& app, int* exit_code);
void RegisterPerplexityCommand(CLI::App& app, int* exit_code);
void RegisterKvCalibrateCommand(CLI::App& app, int* exit_code);
void RegisterKvPlanCommand(CLI::App& app, int* exit_code);
void RegisterSynthCommand(CLI::App& app, int* exit_code);
void RegisterBenchCommand(CLI::App& app, int* exit_code);
void RegisterChatTemplateCommand(CLI::App& app, int* exit_code);
// complete, chat, models: client commands against a router.
void RegisterClientCommands(CLI::App& app, int* exit_code);

}  // namespace kvmesh::cli
