// Placeholder: being written (see runtime/Steps.h).
