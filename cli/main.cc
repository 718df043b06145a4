// kvmesh: local tools (run, tokenize, gguf, …) on GGUF models.
#include <cstdio>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kvmesh: serve and inspect GGUF language models"};
  app.require_subcommand(1);
  int exit_code = 0;
  kvmesh::cli::RegisterRunCommand(app, &exit_code);
  kvmesh::cli::RegisterPerplexityCommand(app, &exit_code);
  kvmesh::cli::RegisterKvCalibrateCommand(app, &exit_code);
  kvmesh::cli::RegisterKvPlanCommand(app, &exit_code);
  kvmesh::cli::RegisterTokenizeCommand(app, &exit_code);
  kvmesh::cli::RegisterGgufCommand(app, &exit_code);
  kvmesh::cli::RegisterBenchCommand(app, &exit_code);
  kvmesh::cli::RegisterSynthCommand(app, &exit_code);
  kvmesh::cli::RegisterChatTemplateCommand(app, &exit_code);
  kvmesh::cli::RegisterClientCommands(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
