"""InferenceNeuronStack: the Neuron image on Inferentia2 and Trainium instances."""

from stacks.server_stack import ModelServerStack


class InferenceNeuronStack(ModelServerStack):
    pass
